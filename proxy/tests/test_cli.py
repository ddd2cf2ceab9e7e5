"""`rnf params check` prints the predicted band and fails on a broken rule; `rnf proxy` rejects bad files."""

from click.testing import CliRunner
from rnf_proxy.cli import params, proxy


def test_params_check_prints_the_band_and_passes_the_defaults():
    # the default reference is the forecast margin, which only a run measures; until it is known, the loop
    # delay's worth of the rate: at 20 Mbit/s (2.5 MB/s) and a 30 ms loop q0 = 75000 B, band = half of
    # min(q0, B_max - q0) = 37500 B = 15 ms of the rate
    args = ["check", "--b-max", "300000", "--rate-mbps", "20", "--variation-period", "0.2", "--loop-ms", "30"]
    result = CliRunner().invoke(params, args)
    assert result.exit_code == 0, result.output
    assert "predicted band at 20 Mbit/s: |q - q0| < 37500 B, 15.0 ms, q in (37500, 112500) B" in result.output
    assert "band 37500 B (15.0 ms) vs margin 75000 B (30.0 ms)" in result.output
    assert "FAIL" not in result.output


def test_params_check_in_bytes_prints_the_band_in_time_too():
    args = ["check", "--b-max", "300000", "--q0", "150000", "--rate-mbps", "20"]
    result = CliRunner().invoke(params, args)
    assert result.exit_code == 0, result.output
    assert "predicted band: |q - q0| < 75000 B, 30.0 ms, q in (75000, 225000) B" in result.output


def test_params_check_breaks_rule_43_in_time_units():
    # a 100 ms target at 20 Mbit/s is q0 = 250000 B of a 300000 B queue: with eps fixed at 2e6 B/s and the
    # paper's delta*Ts = 0.875 (sgn), the band, 2e6 x 0.01 / 0.125 = 160000 B (64 ms), exceeds min(q0, B_max - q0)
    # = 50000 B (20 ms)
    args = ["check", "--b-max", "300000", "--target-ms", "100", "--eps", "2000000", "--rate-mbps", "20"]
    args += ["--switching", "sign"]
    result = CliRunner().invoke(params, args)
    assert result.exit_code == 1
    assert "FAIL band < min(q0, B_max - q0) (43): band 160000 B (64.0 ms) vs margin 50000 B (20.0 ms)" in result.output


def test_params_check_without_the_loop_does_not_pretend_to_check_the_default_target():
    result = CliRunner().invoke(params, ["check", "--b-max", "300000", "--rate-mbps", "20"])
    assert result.exit_code == 0
    assert "--   band < min(q0, B_max - q0) (43): a delay target needs the rate (and the loop)" in result.output


def test_params_check_fails_when_a_step_drains_the_queue():
    # the paper's Sec. 5.2 example in bytes: Ts = 0.2 s against B_max/b_bar = 200 kB / 1.16 MB/s = 0.17 s
    args = ["check", "--ts", "0.2", "--delta", "4", "--eps", "20000", "--q0", "100000", "--b-max", "200000"]
    result = CliRunner().invoke(params, [*args, "--rate-mbps", "9.28"])
    assert result.exit_code == 1
    assert "FAIL Ts < B_max/b_bar" in result.output
    assert "predicted band: |q - q0| < 20000 B" in result.output


def test_params_check_reads_a_proxy_file(tmp_path):
    path = tmp_path / "proxy.toml"
    path.write_text('[controller]\nkind = "smvs"\nb_max_bytes = 200000\nq0_bytes = 100000\neps = 10000000\n')
    result = CliRunner().invoke(params, ["check", str(path)])
    assert result.exit_code == 1 and "FAIL band < min(q0, B_max - q0)" in result.output


def test_proxy_rejects_a_bad_file_in_one_line(tmp_path):
    path = tmp_path / "proxy.toml"
    path.write_text('[controller]\nkind = "nope"\n')
    result = CliRunner().invoke(proxy, [str(path)])
    assert result.exit_code == 2 and "proxy.toml: controller" in result.output
