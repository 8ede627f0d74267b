"""The book's machinery (layer: book): numbers quoted in prose (:mod:`~tanbias.book.prose`),
the one table format (:mod:`~tanbias.book.tables`), the guard of the verdict words a reader sees
(:mod:`~tanbias.book.verdict_words`), the exercises' checkers, the benchmark,
the API page's Sphinx extension and the strict parallel build. It may import every layer."""
