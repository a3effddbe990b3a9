"""The README's configuration table is the one the settings object generates."""

from __future__ import annotations

from pathlib import Path

from threadfold.api.settings import markdown_table

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_configuration_table_is_generated_from_the_settings() -> None:
    text = README.read_text()
    start, end = "<!-- settings:start -->\n", "<!-- settings:end -->"
    table = text[text.index(start) + len(start) : text.index(end)].strip()
    assert table == markdown_table(), "regenerate it: python -m threadfold.api.settings"


def test_the_readme_names_the_two_commands_of_a_fresh_machine() -> None:
    text = README.read_text()
    assert "make run" in text and "make test" in text
    assert "make test" in (README.parent / ".ci" / "run").read_text()
