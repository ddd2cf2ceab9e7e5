"""The ZeroMQ bridge: a GNU Radio channel between one srsenb and N srsue on srsRAN 4G's ZeroMQ virtual radio.

`flowgraph` and `gain` need GNU Radio and run under Debian's `/usr/bin/python3`; `config` and `cli` need the
venv's pydantic and click; the other modules use only the standard library, numpy and pyzmq and run under both.
"""
