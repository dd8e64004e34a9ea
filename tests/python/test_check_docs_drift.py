"""tools/check-docs' drift checks (env, surface, paths, readmes) and
tools/env-table: they pass on the tree, and each fails, naming the file, on a
small tree made here that has drifted the way issue 46 found the real one had:
a variable read in the code that the README's table leaves out, a binding that
includes a header of floor 5 the ARCHITECTURE does not name, a document that
names a file not in the tree, a floor README that opens with two paragraphs,
a folder grown past its size budget (tools/size-table).

[SECTION] The tree
[SECTION] Broken examples
"""
import subprocess
import sys

from test_check_docs import CHECK, ROOT, write  # the tree, the checker, a file of a small tree

ENV_TABLE = ROOT / "tools" / "env-table"


def check(root, *only):
    return subprocess.run([sys.executable, str(CHECK), "--root", str(root), "--only", ",".join(only)],
                          capture_output=True, text=True, timeout=120)


# [SECTION] The tree ------------------------------------------------------------------------

def test_the_tree_passes_the_drift_checks():
    p = check(ROOT, "env", "surface", "paths", "readmes")
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_env_table_lists_every_variable_the_code_reads():
    out = subprocess.run([sys.executable, str(ENV_TABLE)], capture_output=True, text=True, check=True).stdout
    for name in ("DESCENT_NUM_THREADS", "DESCENT_LOG", "DESCENT_TRACE_MAX_SPANS", "DESCENT_SIM_MEMORY",
                 "DESCENT_ALLOC_CONF", "DESCENT_TRACE"):
        assert f"| `{name}` |" in out
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert out.strip() in readme


# [SECTION] Broken examples -----------------------------------------------------------------

def test_a_variable_nobody_described_fails(tmp_path):
    write(tmp_path, "floors/core/a.cpp", 'const char* a = std::getenv("DESCENT_NOT_A_VARIABLE");\n')
    p = subprocess.run([sys.executable, str(ENV_TABLE), "--root", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 1
    assert "DESCENT_NOT_A_VARIABLE is read in floors/core/a.cpp but not described" in p.stderr
    # ... and check-docs says so too
    write(tmp_path, "README.md", "no table\n")
    p = check(tmp_path, "env")
    assert p.returncode == 1
    assert "DESCENT_NOT_A_VARIABLE" in p.stdout


def test_a_readme_table_missing_a_row_fails(tmp_path):
    for rel in ("floors", "tracer", "ui"):
        (tmp_path / rel).symlink_to(ROOT / rel)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `DESCENT_LOG` |"))
    write(tmp_path, "README.md", readme.replace(row + "\n", ""))
    p = check(tmp_path, "env")
    assert p.returncode == 1
    assert "tools/env-table prints '| `DESCENT_LOG` |" in p.stdout, p.stdout


def test_a_binding_include_past_its_surface_fails(tmp_path):
    write(tmp_path, "docs/ARCHITECTURE.md", """
        # descent

        - The binding uses the kernels floor's `kernels.h`, and also `cpu/parallel.h`
          (`set_num_threads`). Nothing else of the kernels floor is the binding's:
          its loops (`elementwise.h`) stay the floor's own.
        """)
    write(tmp_path, "floors/binding/a.cpp", '#include "floors/kernels/kernels.h"\n'
                                           '#include "floors/kernels/device/device_loops.h"\n')
    p = check(tmp_path, "surface")
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert any(l.startswith("floors/binding/a.cpp:1: the binding includes floors/kernels/device/device_loops.h")
               for l in lines), p.stdout
    # the other way: cpu/parallel.h is named but nobody includes it
    assert any("names floors/kernels/cpu/parallel.h as the binding's surface, but the binding does not include it"
               in l for l in lines), p.stdout


def test_a_path_not_in_the_tree_fails(tmp_path):
    write(tmp_path, "floors/core/a.h", "// a\n")
    write(tmp_path, "README.md", "See `floors/core/a.h`, `floors/core/b.h`, `shared/DESIGN.md` and "
                                 "`floors/core/*.h`, `floors/core/*.cu`.\n")
    p = check(tmp_path, "paths")
    assert p.returncode == 1
    assert p.stdout.splitlines() == [
        "README.md:1: names floors/core/b.h, which is not in the tree",
        "README.md:1: names shared/DESIGN.md, which is not in the tree",
        "README.md:1: names floors/core/*.cu, which is not in the tree",
    ], p.stdout


def test_a_floor_readme_of_two_paragraphs_fails(tmp_path):
    write(tmp_path, "floors/core/README.md", """
        # core

        What it holds.

        More.

        ## Detail

        Detail.
        """)
    write(tmp_path, "floors/launch/README.md", """
        # launch

        What it holds, on
        two lines.

        ## Detail

        More.
        """)
    p = check(tmp_path, "readmes")
    assert p.returncode == 1
    (line,) = p.stdout.splitlines()
    assert line.startswith("floors/core/README.md:3: opens with 2 paragraphs before its first heading"), line


def test_a_folder_over_its_size_budget_fails(tmp_path):
    write(tmp_path, "floors/launch/big.cpp", "int x;\n" * 600)
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "size-table"), "--root", str(tmp_path), "--check"],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stdout.splitlines() == [
        "floors/launch/ has 600 lines, over its budget of 500 (tools/size-table's BUDGETS: split the folder, "
        "or raise the budget in the commit that needs it, saying why)"], p.stdout
    # the tree itself is within every budget
    assert subprocess.run([sys.executable, str(ROOT / "tools" / "size-table"), "--check"]).returncode == 0
