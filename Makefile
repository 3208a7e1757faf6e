# muster — common tasks. `make help` lists them.
VENV   ?= .venv
BIN    := $(VENV)/bin
PYTEST_FLAGS      ?= -q --durations=10
BENCH_ARGS        ?=
CONFORMANCE_ARGS  ?=
KAFKA_DIFF_ARGS   ?=

.DEFAULT_GOAL := help
.PHONY: help install test lint demo bench conformance conformance-build franz-go kafka-diff spark-kafka-jars

help:
	@echo "make install      create .venv, pip install -c constraints.txt -e '.[test,spark]', apt-get kcat etc. if missing"
	@echo "make test         lint, then the test suite (pytest)"
	@echo "make lint         ruff check src tests bench reliability conformance"
	@echo "make demo         start a broker on 127.0.0.1:9092 and produce/consume with a real client"
	@echo "make bench        muster vs Tansu produce/fetch throughput (BENCH_ARGS='--quick ...')"
	@echo "make conformance  build librdkafka 2.15.1's test suite and run it against muster"
	@echo "                  (CONFORMANCE_ARGS='--group' | '--produce' | '--tests 0018,0030')"
	@echo "make franz-go     franz-go's own kgo integration tests against muster (FRANZ_GO_ARGS='--broker kafka')"
	@echo "make kafka-diff   the same raw requests to Kafka 4.4 and muster, answers compared"
	@echo "                  (KAFKA_DIFF_ARGS='-k classic.*' | '-v' | '--kafka H:P --muster H:P')"
	@echo "make spark-kafka-jars  Spark's own Kafka connector into .cache/spark-kafka/lib, for"
	@echo "                  MUSTER_SPARK_JARS=.cache/spark-kafka/lib muster analyze --source kafka"

# `make test` and `make demo` work on a fresh clone: they install first when
# pyproject.toml or constraints.txt (the pins) is newer than the last install.
STAMP := $(VENV)/.muster-installed

install:
	.ci/install
	@touch $(STAMP)

$(STAMP): pyproject.toml constraints.txt .ci/install
	.ci/install
	@touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench reliability conformance

test:
	./run.sh test

demo:
	./run.sh demo

bench: $(STAMP)
	$(BIN)/python bench/produce_fetch.py $(BENCH_ARGS)

conformance-build:
	conformance/build_librdkafka.sh

conformance: conformance-build
	$(BIN)/python conformance/run.py $(CONFORMANCE_ARGS)

FRANZ_GO_ARGS ?=
franz-go: $(STAMP)
	$(BIN)/python conformance/franz_go.py $(FRANZ_GO_ARGS)
# conformance/kafka_diff: one Kafka 4.4 (from .cache/kafka/lib, see
# tests/support/kafka.py) and one muster, every scenario against both; the last
# line reads `kafka-diff: N scenarios, M differ, K documented`, exit 1 if M > 0.
kafka-diff: $(STAMP)
	PYTHONPATH=$(CURDIR)/src:$(CURDIR) $(BIN)/python -m conformance.kafka_diff $(KAFKA_DIFF_ARGS)
spark-kafka-jars: $(STAMP)
	$(BIN)/python -m tests.support.spark_kafka
