"""memlib's modules import each other without cycles (the layers themselves are a contract
that `lint-imports` checks, configured in pyproject.toml)."""

import grimp


def import_cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module, or of a module importing itself,
    in the graph module -> modules it imports (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in imports.get(module, ()):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1 or module in imports.get(module, ()):
                cycles.append(sorted(group))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return cycles


def test_import_cycles_finds_loops_and_only_loops():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"a"}}) == [["a"]]


def test_memlib_has_no_import_cycle():
    graph = grimp.build_graph("memlib", include_external_packages=False)
    imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert import_cycles(imports) == []
