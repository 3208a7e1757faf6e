import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.common.utils.internals.Exit;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs many of Kafka's command-line tools in one JVM (a JVM start costs a second
 * or more): each line of stdin is a JSON object {"main": class, "args": [...],
 * "stdin": text?}; each answers one JSON line {"args", "code", "out", "err"} on
 * the real stdout. Exit.exit is turned into an exception, System.out/err/in are
 * swapped per command.
 */
public class ToolRunner {
    static final class Exited extends RuntimeException {
        final int code;
        Exited(int code) { super(null, null, false, false); this.code = code; }
    }

    static Integer firstExit;

    public static void main(String[] argv) throws Exception {
        ObjectMapper json = new ObjectMapper();
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        InputStream realIn = System.in;
        // Some tools call Exit.exit inside a catch (Throwable) that reports it and
        // exits again: the first code counts, the report of Exited is dropped.
        Exit.setExitProcedure((code, msg) -> { if (firstExit == null) firstExit = code; throw new Exited(code); });
        Exit.setHaltProcedure((code, msg) -> { if (firstExit == null) firstExit = code; throw new Exited(code); });
        BufferedReader lines = new BufferedReader(new InputStreamReader(realIn, StandardCharsets.UTF_8));
        String line;
        while ((line = lines.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode cmd = json.readTree(line);
            List<String> args = new ArrayList<>();
            cmd.get("args").forEach(a -> args.add(a.asText()));
            String stdin = cmd.has("stdin") ? cmd.get("stdin").asText() : "";
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            System.setIn(new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)));
            int code = 0;
            firstExit = null;
            try {
                Method main = Class.forName(cmd.get("main").asText()).getMethod("main", String[].class);
                main.invoke(null, (Object) args.toArray(new String[0]));
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof Exited) {
                    code = ((Exited) cause).code;
                } else {
                    code = -1;
                    cause.printStackTrace(System.err);
                }
            } catch (Exited e) {
                code = e.code;
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(realOut);
                System.setErr(realErr);
                System.setIn(realIn);
            }
            if (firstExit != null) code = firstExit;
            String errText = err.toString(StandardCharsets.UTF_8)
                .replace("null\nToolRunner$Exited\n\n", "").replace("ToolRunner$Exited\n", "");
            Map<String, Object> answer = new LinkedHashMap<>();
            answer.put("args", args);
            answer.put("code", code);
            answer.put("out", out.toString(StandardCharsets.UTF_8));
            answer.put("err", errText);
            realOut.println(json.writeValueAsString(answer));
            realOut.flush();
        }
    }
}
