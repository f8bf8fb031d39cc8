"""Fails when a notebook is committed with outputs or execution counts: they would go stale."""
import json
import sys

bad = []
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            bad.append(f"{path}: cell {i} has stored outputs; clear them before committing")
print("\n".join(bad) or f"ci: {len(sys.argv) - 1} notebooks without stored outputs")
sys.exit(1 if bad else 0)
