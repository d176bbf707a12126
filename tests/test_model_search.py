"""``snsim maxbatch --model``: the largest batch of a PyTorch model per plan, by ``snsim
predict`` probes (snsim.experiments.model_search)."""
import json
import math

import pytest

from snsim.errors import ConfigError
from snsim.experiments.model_search import GROWTH, edge_search


# -- the search, on functions whose edge is known ---------------------------------------------
def _counted(fits, used):
    calls = []

    def f(n):
        calls.append(n)
        return fits(n)
    return f, used, calls


@pytest.mark.parametrize("edge", [1, 2, 7, 93, 94, 241, 4095, 100_000])
def test_the_edge_of_a_linear_peak_is_found_in_few_probes(edge):
    # allocated 50 MB a sample over 2 GB of weights, reserved 3 % above: the size that fits
    # is the largest whose reserved peak stays within the budget
    base, per = 2e9, 5e7

    def used(n):
        return base + per * n, 1.03 * (base + per * n)
    budget = used(edge)[1] + 0.5 * 1.03 * per
    fits, used, calls = _counted(lambda n: used(n)[1] <= budget, used)
    assert edge_search(fits, used, 1, 1 << 20, budget, base) == (edge, edge + 1)
    assert len(calls) <= 6 + 2 * math.log2(edge + 1), calls


@pytest.mark.parametrize("edge", [3, 50, 333])
def test_a_flat_start_and_a_bent_peak_still_end_at_the_edge(edge):
    # small sizes dominated by a fixed workspace (the line through them is far too flat), then
    # a peak that grows faster than linearly (a quadratic term): the growth cap and the
    # bisection still bracket the edge; every probe below the answer fits, above it fails
    def used(n):
        a = 1e9 + max(4e8, 1e6 * n) + 2e3 * n * n
        return a, a * 1.1
    budget = (used(edge)[1] + used(edge + 1)[1]) / 2

    def under(n):
        return used(n)[1] <= budget
    fits, used, calls = _counted(under, used)
    ok, bad = edge_search(fits, used, 1, 1 << 20, budget, 1e9)
    assert (ok, bad) == (edge, edge + 1)
    assert all(n <= ok for n in calls if under(n)) and all(n >= bad for n in calls
                                                            if not under(n))
    grown = [b / a for a, b in zip(calls, calls[1:]) if b > a]
    assert max(grown) <= GROWTH


def test_when_every_size_fits_the_limit_is_the_answer():
    used = lambda n: (n, n)      # noqa: E731
    assert edge_search(lambda n: True, used, 1, 300, 1e9) == (300, 301)
    assert edge_search(lambda n: True, used, 5, 5, 1e9) == (5, 6)


# -- on a PyTorch model (torch needed, no GPU) ------------------------------------------------
@pytest.fixture()
def netpkg(tiny):
    """conftest's small conv net, whose blocks a checkpoint plan can wrap."""
    pytest.importorskip("torch")
    return f"{tiny}:Net"


BUDGET = 160 * 2**20


def test_the_answer_is_what_snsim_predict_says_at_the_edge(netpkg):
    from snsim.experiments.model_search import max_batch_model
    from snsim.torchsim.amp import as_setup
    from snsim.torchsim.execute import predict_plan
    rep = max_batch_model(netpkg, policies="plain,checkpoint", budget_bytes=BUDGET,
                          torch_version="2.11", jobs=1)
    plain, ckpt = rep.best("plain"), rep.best("checkpoint")
    assert plain.next_batch == plain.max_batch + 1 and plain.max_batch > 1
    # checked apart from the search: snsim predict at the answer and at the next batch
    for n, fits in ((plain.max_batch, True), (plain.next_batch, False),
                    (plain.max_batch // 2, True)):
        r, _ = predict_plan(netpkg, n, "plain", optimizer=as_setup("sgd-momentum"),
                            budget_bytes=BUDGET, torch_version="2.11")
        assert r["feasible"] is fits, n
    assert plain.peak_reserved_bytes <= BUDGET < plain.next_reserved_bytes
    assert plain.next_failure.startswith("out of memory")
    # checkpointing the blocks frees their saved activations: a larger batch fits, slower
    assert ckpt.max_batch > plain.max_batch
    assert rep.probes and all(p["plan"] in ("plain", "checkpoint")
                              for p in rep.probes)
    frame = rep.frame()
    assert list(frame["max_batch"]) == [plain.max_batch, ckpt.max_batch]
    # two worker processes, one plan each: the same report
    par = max_batch_model(netpkg, policies="plain,checkpoint", budget_bytes=BUDGET,
                          torch_version="2.11", jobs=2)
    def probed(r):
        return [{k: v for k, v in q.items() if k != "record_wall_s"} for q in r.probes]
    assert par.rows == rep.rows and probed(par) == probed(rep)


def test_the_cli_prints_json_and_refuses_mixed_flags(netpkg, capsys):
    from snsim.cli import main
    assert main(["maxbatch", "--model", netpkg, "--policy", "plain", "--budget", "160MiB",
                 "--max-batch", "20", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["max_batch"] == 20 and rows[0]["next_batch"] == 21    # all fit: the limit
    assert rows[0]["hardware"] == "h200" and rows[0]["next_failure"] == ""
    bad = [(["--model", netpkg, "--policy", "plain,checkpoint", "--option", "every=2"],
            "--option applies to one plan"),
           (["--model", netpkg, "--allocator", "pytorch"], "--allocator applies to a zoo"),
           (["--model", netpkg, "--network", "resnet50"], "--network applies to a zoo"),
           (["--network", "resnet50", "--amp", "bf16"], "--amp bf16 needs --framework pytorch"),
           (["--network", "resnet50", "--matmul-precision", "high"],
            "--matmul-precision applies to a PyTorch model"),
           (["--model", netpkg, "--matmul-precision", "tf32"],
            "--matmul-precision 'tf32' is unknown"),
           (["--model", netpkg, "--policy", "plain,plain"], "names plain twice"),
           (["--model", netpkg, "--policy", "lru"], "policy 'lru' is unknown here")]
    for argv, msg in bad:
        assert main(["maxbatch", *argv]) != 0
        err = capsys.readouterr().err
        assert msg in err and "Traceback" not in err, (argv, err)


def test_a_model_whose_weights_do_not_fit_has_no_answer(netpkg):
    from snsim.experiments.model_search import max_batch_model
    rep = max_batch_model(netpkg, policies="plain", budget_bytes=1 << 20)
    row = rep.best("plain")
    assert row.max_batch is None and row.next_batch == 1 and row.probes == 1
    assert "out of memory" in row.next_failure


def test_bad_search_ranges_are_refused(netpkg):
    from snsim.experiments.model_search import max_batch_model
    with pytest.raises(ConfigError, match="--min-batch"):
        max_batch_model(netpkg, min_batch=0)
    with pytest.raises(ConfigError, match="--max-batch"):
        max_batch_model(netpkg, min_batch=8, max_batch=4)


def test_a_step_that_does_not_fit_names_the_search_for_its_batch(netpkg, capsys):
    from snsim.cli import main
    assert main(["predict", "--model", netpkg, "--batch", "4096", "--budget", "160MiB",
                 "--policy", "checkpoint", "--option", "every=2"]) == 3
    out = capsys.readouterr().out
    cmd = (f"snsim maxbatch --model {netpkg} --policy checkpoint --option every=2 "
           f"--budget 160MiB")
    assert f"the largest batch that fits: {cmd}" in out
    # the command it names runs, and answers below the batch that did not fit
    assert main(cmd.split()[1:] + ["--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["plan"] == "checkpoint(every=2)" and 1 < row["max_batch"] < 4096
