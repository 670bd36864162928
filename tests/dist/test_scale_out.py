"""The scale-out paths from outside (issue #15): `mpirun -np N opchain ... --tp T --ep E` on every
golden model gives the single-process logits (f32, within 1e-3) and the same greedy tokens, for
prefill, decode, batched decode with preemption, eager and graph mode, on both MoE paths; and a bad
layout is a clear error on every rank with a non-zero exit, never a hang.

Runs oversubscribed on CI's 2 cores, as root (Open MPI's root guard is lifted by environment)."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("OPCHAIN_BIN", str(ROOT / "build/apps/opchain/opchain"))
MODELS = ROOT / "tests/data/models"
MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(MPIRUN is None, reason="Open MPI's mpirun is not installed (scripts/install-deps.sh)")

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,vader",
           OMPI_MCA_btl_vader_single_copy_mechanism="none", OPCHAIN_COMM_TIMEOUT_S="60", OPCHAIN_THREADS="1")
MOE = ["tiny-qwen3-moe", "tiny-qwen2-moe", "trained-qwen3-moe", "tiny-qwen3-next", "tiny-qwen3_5-moe",
       "tiny-qwen3_5-moe-vl"]
DENSE = ["tiny-llama", "tiny-qwen3-dense", "tiny-qwen3_5"]
IDS = "1,17,254,3,99,7,300,42,5,11,128,64"


def run(cmd, np_=None, timeout=120, check=True):
    argv = ([MPIRUN, "-np", str(np_), "--oversubscribe", "--bind-to", "none"] if np_ else []) + [BIN] + cmd
    p = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def logits(tmp_path, model, np_=None, extra=()):
    out = tmp_path / f"logits-{np_}-{'-'.join(extra)}.npy"
    run(["logits", "--model", str(MODELS / model), "--ids", IDS, "--precision", "f32", "--out", str(out), *extra],
        np_)
    return np.load(out)


LAYOUTS = [(2, ["--tp", "2"]), (2, ["--ep", "2"]), (2, ["--tp", "2", "--ep", "2"]),
           (4, ["--tp", "4", "--ep", "4"]), (4, ["--tp", "2", "--ep", "4"])]


@pytest.mark.parametrize("model", MOE + DENSE)
@pytest.mark.parametrize("np_,layout", LAYOUTS, ids=[f"np{n}-" + "".join(l) for n, l in LAYOUTS])
def test_prefill_logits_match_one_process(tmp_path, model, np_, layout):
    alone = logits(tmp_path, model)
    spread = logits(tmp_path, model, np_, layout)
    assert spread.shape == alone.shape
    assert np.abs(spread - alone).max() < 1e-3


@pytest.mark.parametrize("model", MOE)
@pytest.mark.parametrize("path", ["allgather", "alltoall"])
def test_both_moe_paths_match_one_process(tmp_path, model, path):
    alone = logits(tmp_path, model)
    spread = logits(tmp_path, model, 2, ["--ep", "2", "--moe-comm", path])
    assert np.abs(spread - alone).max() < 1e-3


def generate(model, np_=None, extra=(), prompts=None, tmp_path=None):
    cmd = ["generate", "--model", str(MODELS / model), "--temperature", "0", "--max-new-tokens", "12",
           "--ignore-eos", "--json", "--precision", "f32", *extra]
    if prompts:
        f = tmp_path / "prompts.jsonl"
        f.write_text("".join(json.dumps({"prompt_ids": p}) + "\n" for p in prompts))
        cmd += ["--prompts-file", str(f)]
    else:
        cmd += ["--prompt-ids", IDS]
    return [json.loads(l)["ids"] for l in run(cmd, np_).stdout.splitlines() if l.strip()]


@pytest.mark.parametrize("model", ["trained-qwen3-moe", "tiny-qwen3-dense", "tiny-qwen3_5-moe"])
@pytest.mark.parametrize("mode", ["--graph", "--eager"])
def test_greedy_tokens_match_one_process(model, mode):
    alone = generate(model, extra=[mode])
    for np_, layout in [(2, ["--tp", "2", "--ep", "2"]), (4, ["--tp", "2", "--ep", "4"])]:
        assert generate(model, np_, [mode, *layout]) == alone, (np_, layout)


def test_batched_decode_with_preemption_matches_one_process(tmp_path):
    # Four sequences of ~24 tokens in 14 blocks of 4 (56 tokens): the engine must preempt and recompute.
    prompts = [[1, 17, 254, 3], [99, 7, 300], [42, 5, 11, 128, 64], [9, 8]]
    tight = ["--block-size", "4", "--kv-blocks", "15"]
    alone = generate("trained-qwen3-moe", extra=tight, prompts=prompts, tmp_path=tmp_path)
    roomy = generate("trained-qwen3-moe", prompts=prompts, tmp_path=tmp_path)
    assert alone == roomy
    for path in ["allgather", "alltoall"]:
        spread = generate("trained-qwen3-moe", 2, tight + ["--tp", "2", "--ep", "2", "--moe-comm", path],
                          prompts=prompts, tmp_path=tmp_path)
        assert spread == alone, path


def test_a_world_that_the_layout_does_not_fit_fails_on_every_rank():
    p = run(["logits", "--model", str(MODELS / "tiny-qwen3-moe"), "--ids", IDS, "--tp", "3"], 2, check=False)
    assert p.returncode != 0
    assert "tp" in p.stderr and "2" in p.stderr, p.stderr


def test_heads_that_tp_does_not_divide_are_a_clear_error():
    p = run(["logits", "--model", str(MODELS / "tiny-qwen3-moe"), "--ids", IDS, "--tp", "3"], 3, check=False,
            timeout=120)
    assert p.returncode != 0
    assert "does not divide" in p.stderr, p.stderr


def test_tp_without_mpirun_says_how_to_launch():
    p = run(["logits", "--model", str(MODELS / "tiny-qwen3-moe"), "--ids", IDS, "--tp", "2"], check=False)
    assert p.returncode != 0
    assert "mpirun" in p.stderr, p.stderr


def test_trace_shows_the_collectives_and_one_chrome_lane_per_rank(tmp_path):
    chrome = tmp_path / "trace.json"
    p = run(["trace", "--model", str(MODELS / "tiny-qwen3-moe"), "--ids", "1,2,3", "--decode-steps", "2",
             "--tp", "2", "--ep", "2", "--moe-comm", "alltoall", "--chrome-trace", str(chrome)], 2)
    assert "host:moe_alltoall | comm=alltoall ep=2 bytes_sent=" in p.stdout
    assert "host:tp_all_reduce | comm=tp ranks=2" in p.stdout
    events = json.loads(chrome.read_text())["traceEvents"]
    assert {e["pid"] for e in events} == {0, 1}
    for rank in (0, 1):
        assert any(e["pid"] == rank and e["name"] == "moe_alltoall" for e in events)
    assert not list(tmp_path.glob("trace.json.rank*"))  # the parts are merged and removed


def test_bench_reports_communication_per_step():
    p = run(["bench", "--model", str(MODELS / "trained-qwen3-moe"), "--tp", "2", "--ep", "2", "--batches", "1",
             "--prompt-lens", "8", "--gen", "2", "--reps", "1", "--depth", "16", "--bandwidth-mib", "8"], 2)
    assert "ms/step and" in p.stderr + p.stdout and "KiB/step on rank 0" in p.stderr + p.stdout


def rank_pid(mpirun_pid, rank=0):
    """The pid of `rank` among mpirun's children (Open MPI puts the rank in each one's environment)."""
    for d in Path("/proc").iterdir():
        try:
            if not d.name.isdigit() or int((d / "stat").read_text().split(") ")[1].split()[1]) != mpirun_pid:
                continue
            if f"OMPI_COMM_WORLD_RANK={rank}\0".encode() in (d / "environ").read_bytes():
                return int(d.name)
        except (OSError, IndexError, ValueError):
            continue
    raise AssertionError(f"no rank {rank} under mpirun {mpirun_pid}")


def serve_completion(np_, extra, tmp_path):
    """Starts `opchain serve` (under mpirun when np_), asks one greedy completion, stops it with SIGTERM."""
    import re
    import signal
    import time
    import urllib.request

    log = tmp_path / f"serve-{np_}.log"
    argv = ([MPIRUN, "-np", str(np_), "--oversubscribe", "--bind-to", "none"] if np_ else []) + [
        BIN, "serve", "--model", str(MODELS / "trained-qwen3-moe"), "--host", "127.0.0.1", "--port", "0",
        "--precision", "f32", "--served-model-name", "m", *extra]
    with open(log, "wb") as err:
        proc = subprocess.Popen(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline, port = time.time() + 60, None
            while port is None:
                m = re.search(r"on http://127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))
                port = int(m.group(1)) if m else None
                assert proc.poll() is None, log.read_text()
                assert time.time() < deadline, log.read_text()
                time.sleep(0.05)
            body = json.dumps({"model": "m", "prompt": "The cat", "max_tokens": 12, "temperature": 0}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                         {"Content-Type": "application/json"})
            text = json.loads(urllib.request.urlopen(req, timeout=60).read())["choices"][0]["text"]
        finally:
            # The driver is the one to signal: it drains, then releases the workers. (mpirun forwards a
            # signal it gets to every rank and then reports the job as killed, whatever the ranks did.)
            os.kill(rank_pid(proc.pid) if np_ else proc.pid, signal.SIGTERM)
            rc = proc.wait(timeout=60)
    assert rc == 0, log.read_text()
    return text


def test_serve_under_mpirun_answers_as_one_process_and_stops_cleanly(tmp_path):
    alone = serve_completion(None, [], tmp_path)
    assert serve_completion(2, ["--tp", "2", "--ep", "2"], tmp_path) == alone


def test_a_worker_that_dies_ends_the_job_with_an_error(tmp_path):
    """A worker killed while the driver serves: the job ends non-zero in bounded time, never hangs."""
    import signal
    import time

    log = tmp_path / "serve.log"
    argv = [MPIRUN, "-np", "2", "--oversubscribe", "--bind-to", "none", BIN, "serve", "--model",
            str(MODELS / "trained-qwen3-moe"), "--host", "127.0.0.1", "--port", "0", "--ep", "2"]
    with open(log, "wb") as err:
        proc = subprocess.Popen(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.time() + 60
        while "serving" not in log.read_text(errors="replace"):
            assert proc.poll() is None and time.time() < deadline, log.read_text()
            time.sleep(0.05)
        os.kill(rank_pid(proc.pid, 1), signal.SIGKILL)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("the job hung after a worker died:\n" + log.read_text())
    assert rc != 0
    assert "rank 1" in log.read_text() or "signal 9" in log.read_text(), log.read_text()


@pytest.mark.parametrize("fmt", ["gptq", "gptq-act-order", "awq", "fp8-block", "w8a8", "w4a16"])
def test_quantised_checkpoints_shard_like_dense_ones(tmp_path, fmt):
    """Row-parallel shards of quantised weights keep whole scale groups (select_cols); act-order
    weights, whose columns the loader sorts by group, are split back in channel order."""
    out = tmp_path / fmt
    run(["quantize", "--model", str(MODELS / "trained-qwen3-moe"), "--format", fmt.removesuffix("-act-order"),
         "--out", str(out)]
        + ([] if fmt in ("fp8-block", "w8a8") else ["--group-size", "32"])
        + (["--act-order"] if fmt.endswith("-act-order") else []))
    ids = ["--ids", IDS, "--precision", "f32"]
    run(["logits", "--model", str(out), *ids, "--out", str(tmp_path / "a.npy")])
    run(["logits", "--model", str(out), *ids, "--out", str(tmp_path / "b.npy"), "--tp", "2", "--ep", "2"], 2)
    assert np.abs(np.load(tmp_path / "a.npy") - np.load(tmp_path / "b.npy")).max() < 1e-3
