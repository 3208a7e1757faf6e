"""Certificate subject -> principal name, by Kafka's `ssl.principal.mapping.rules`.

Pure: the DN comes in as a string (RFC 2253 order, as Java's X500Principal
prints it), the user name goes out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Kafka's grammar: DEFAULT, or RULE:pattern/replacement/ with an optional L or U.
_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER = re.compile(_RULE)

ANONYMOUS = "User:ANONYMOUS"


class NoMatchingRule(ValueError):
    pass


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        m = self.pattern.fullmatch(dn)
        if m is None:
            return None
        out = _expand(m, self.replacement)
        if self.case == "L":
            return out.lower()
        return out.upper() if self.case == "U" else out


def _expand(m: re.Match[str], replacement: str) -> str:
    """Java's Matcher replacement: `$n` takes digits while they name a group;
    a reference to a group that does not exist stays literal, as Kafka escapes it."""
    out, i, groups = [], 0, m.re.groups
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
        elif c == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            n, i = int(replacement[i + 1]), i + 2
            if n > groups:
                out.append(f"${n}")
                continue
            while i < len(replacement) and replacement[i].isdigit():
                if n * 10 + int(replacement[i]) > groups:
                    break
                n, i = n * 10 + int(replacement[i]), i + 1
            out.append(m.group(n) or "")
        else:
            out.append(c)
            i += 1
    return "".join(out)


class PrincipalMapper:
    def __init__(self, rules: str | None = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        text = (rules or "DEFAULT").strip()
        pos = 0
        while pos < len(text):
            m = _SPLITTER.match(text, pos)
            if m is None or m.end() == pos:
                raise ValueError(f"invalid ssl.principal.mapping.rules at {text[pos:]!r}")
            pos = m.end()
            rule = m.group(1)
            parsed = _PARSER.match(rule)
            if parsed is None or parsed.end() != len(rule):
                raise ValueError(f"invalid rule {rule!r}")
            if parsed.group(1):
                self.rules.append(_Rule(None))
            elif parsed.group(2) is not None:
                pattern = re.compile(parsed.group(2).replace("\\/", "/"))
                self.rules.append(_Rule(pattern, parsed.group(3), parsed.group(4)))
            elif parsed.group(5):
                raise ValueError(f"invalid rule {rule!r}")

    def name(self, dn: str) -> str:
        for rule in self.rules:
            out = rule.apply(dn)
            if out is not None:
                return out
        raise NoMatchingRule(f"no ssl.principal.mapping.rules apply to {dn!r}")
