"""Patterns and limits shared by several request schemas."""

#: The largest value of a signed 32-bit database integer.
MAX_INT = 2 ** 31 - 1
#: The largest value a single precision SQL float holds (as the reference
#: checks it, even where the column is wider).
SQL_FLOAT_MAX = 3.40282e+38

#: Resource class and trait names: upper case letters, digits, underscore.
NAME_PATTERN = '^[A-Z0-9_]+$'
#: Names a user may create: the same characters after ``CUSTOM_``.
CUSTOM_NAME_PATTERN = '^CUSTOM_[A-Z0-9_]+$'
