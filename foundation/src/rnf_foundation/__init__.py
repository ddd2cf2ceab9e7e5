"""The foundation every component imports: `errors` (the one-line user error), `config` (TOML, paths, validation),
`endpoints` (ports, ZeroMQ endpoints, `IP:PORT`), `numbers` (finite floats, seeds), `signals` (SIGTERM as Ctrl-C),
`addresses` (the UE address plan) and `tcp` (TCP_INFO). It imports no component; `rnf_cli` is only the command."""
