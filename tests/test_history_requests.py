"""scripts/history_vs_prediction.py's cut of an allocator history into iterations."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from history_vs_prediction import history_requests, rotated_to  # noqa: E402


def _doc(warmups, steady, iterations, before=0):
    """A history whose first event follows ``before`` unrecorded allocations: the warm-up
    iterations' requests, then ``iterations`` steady ones; marks are cumulative counts."""
    seq, marks = [], []
    for it in list(warmups) + [steady] * iterations:
        marks.append([before + len(seq), 0])
        seq += it
    return {"events": [["alloc", 0, s, 0] for s in seq], "iterations": marks}


STEADY = [512, 4096, 1 << 20, 3 << 20, 4096, 2 << 20]
WARM = ([512, 4096, 1 << 20, 8 << 20, 3 << 20, 4096, 2 << 20], [512, 4096, 1 << 20, 3 << 20])


def test_the_last_complete_iteration_of_a_recorded_process():
    assert history_requests(_doc(WARM, STEADY, 4)) == STEADY


def test_marks_that_count_an_earlier_run_are_shifted_onto_the_events(capsys):
    # the iteration marks count 12345 allocations the history did not record (another run of
    # the same process): the cut is one steady iteration all the same (regnet_y_3_2gf b48
    # fp16 cpu_offload's history came back with no allocation before the shift)
    got = history_requests(_doc(WARM, STEADY, 4, before=12345))
    assert sorted(got) == sorted(STEADY)
    assert "shifted by" in capsys.readouterr().out


def test_an_uncertain_iteration_is_rotated_to_start_with_the_prediction():
    # the cut of a shifted history may start anywhere in the steady iteration
    # (swin_v2_t b24 bf16 superneurons: 10,788 shifts cut equal iterations); the alignment
    # rotates it to where the prediction's first requests come in order
    hist = STEADY[3:] + STEADY[:3]
    assert rotated_to(hist, STEADY, k=3) == STEADY
    assert rotated_to(hist, [7, 7, 7], k=3) == hist       # nowhere: left as it was
    assert rotated_to(hist, STEADY[:2], k=3) == hist      # a prediction shorter than k
