"""Local brokers by kind: the launcher that starts the one a driver declares (or Spark's cluster)
and the catalogue of those ``loadgen brokers up`` keeps running. The brokers themselves live with
their drivers (``loadgen_drivers/<broker>/local/``); the parts they share, in
:mod:`loadgen.driver_api.local`."""
