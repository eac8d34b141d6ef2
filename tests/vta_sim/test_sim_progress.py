"""``vtac sim``: the elapsed time of the run on stderr with ``--progress`` (or on a terminal),
nothing in a pipe."""

from __future__ import annotations

import isa


def test_vtac_sim_shows_the_elapsed_time_only_when_asked(tmp_path, capsys):
    from runtime.cli import main

    out = tmp_path / "mm.npz"
    assert main(["asm", isa.__path__[0] + "/examples/matmul16.vasm", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["sim", str(out)]) == 0
    assert "simulating mm.npz" not in capsys.readouterr().err  # stderr is no terminal here
    assert main(["sim", str(out), "--progress"]) == 0
    captured = capsys.readouterr()
    assert "simulating mm.npz" in captured.err and "cycles" in captured.out
