"""`muster demo`: the whole system on its embedded defaults, driven by real clients.

The broker starts in this process; muster's own client produces orders; a consumer
group forms and churns (a member joins, one leaves, one is SIGKILLed); a Spark
Structured Streaming job aggregates the topic into Parquet through muster's
data source; the rebalance/lag analytics write Parquet tables and an HTML
report.
"""

from muster._lazy import lazy_exports

_EXPORTS = {"run": "muster.demo.scenario"}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
