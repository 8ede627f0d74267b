"""The book's machinery (layer: book): numbers quoted in prose (:mod:`~tanbias.book.prose`),
the one table format (:mod:`~tanbias.book.tables`), the exercises' checkers, the benchmark,
the API page's Sphinx extension and the strict parallel build. It may import every layer."""
