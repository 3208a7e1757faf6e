import sys

from conformance.kafka_diff.runner import main

sys.exit(main())
