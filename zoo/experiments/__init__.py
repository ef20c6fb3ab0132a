"""The experiments that ship with zoo, one module each (``zoo experiment NAME``)."""
