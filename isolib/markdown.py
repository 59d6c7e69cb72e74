"""Tables as Markdown, for results pages and notebooks; imports no plotting library."""

from __future__ import annotations

import pandas as pd

__all__ = ["markdown_table"]


def markdown_table(table: pd.DataFrame, *, digits: int = 3) -> str:
    """``table`` as a Markdown table, floats rounded to ``digits``, ``|`` in text escaped.

    A float column whose every non-zero value would round to 0 (a learning rate) is written with
    ``digits`` significant digits instead, so that it does not read as zeros.
    """
    escaped = table.apply(lambda column: column.str.replace("|", r"\|", regex=False)
                          if column.dtype == object or pd.api.types.is_string_dtype(column) else column)

    def float_format(column: pd.Series) -> str:
        if pd.api.types.is_float_dtype(column):
            nonzero = column.abs()[column.abs() > 0]
            if len(nonzero) and (nonzero < 0.5 * 10.0 ** -digits).all():
                return f".{digits}g"
        return f".{digits}f"

    return escaped.to_markdown(index=False, floatfmt=[float_format(column) for _, column in table.items()])
