"""The error ``jsonschema.validate`` reports for a request body, found in
time linear in the body and with few errors made.

jsonschema makes every error of a body, then reports their best match
(``jsonschema.exceptions.best_match``): an error as high up in the body
as any (the shortest path), among those the one at the greatest path (by
key or index: the last of siblings), then the most relevant keyword
there. A 1 MiB body wrong in each of its 120,000 entries has it make
120,000 errors, at several microseconds each, to report one; a valid
body still costs it a validator object per entry.

:class:`Checker` compiles a schema once into plain Python tests of the
keywords placement's schemas use. They tell whether a body is valid and,
when it is not, where that best match is: the place every error is made
for. There jsonschema makes the errors, with its own keyword functions,
and its own best_match picks one, so that message, schema and paths are
jsonschema's. ``tests/unit/test_schema_errors.py`` checks the two agree.

Two of jsonschema's keyword functions are replaced by the same tests,
made faster: ``uniqueItems`` compares every pair of items that no order
sorts (numbers and strings mixed), hours for a list of 100,000, where
canonical forms in a set find the same duplicates; ``additionalProperties``
takes a Python step per property. And :func:`describe` writes an error as
``str()`` does, with the text of its instance made by
:mod:`placement_lite.pretty` (pprint takes seconds for a 1 MiB body).
"""

import itertools
import numbers
import re

import jsonschema
from jsonschema import _utils

from placement_lite import pretty

#: Keywords a Checker compiles; any other keyword jsonschema knows is
#: refused when a schema is compiled, annotations are ignored as jsonschema
#: ignores them.
SUPPORTED = {'type', 'properties', 'patternProperties', 'additionalProperties',
             'required', 'minProperties', 'maxProperties', 'items',
             'minItems', 'maxItems', 'uniqueItems', 'minLength', 'maxLength',
             'pattern', 'format', 'minimum', 'maximum', 'enum', 'anyOf'}


def _canonical(value):
    """A hashable form of a JSON value, equal for values jsonschema's
    uniqueItems counts as equal (True is not 1, 1 is 1.0)."""
    if isinstance(value, str):
        return str, value
    if isinstance(value, list):
        return list, tuple(map(_canonical, value))
    if isinstance(value, dict):
        return dict, frozenset((key, _canonical(item))
                               for key, item in value.items())
    if isinstance(value, bool) or value is None:
        return type(value), value
    return numbers.Number, value


_NUMBER = {int: numbers.Number, float: numbers.Number}
_SCALARS = {str, int, float, bool, type(None)}


def all_unique(items):
    """jsonschema's uniqueItems test (``_utils.uniq``): sorted neighbours
    compared; for items no order sorts, canonical forms in a set instead
    of every pair."""
    kinds = set(map(type, items))
    if kinds == {str}:
        return len(set(items)) == len(items)
    try:
        ordered = sorted(map(_utils.unbool, items) if bool in kinds
                         else items)
    except (NotImplementedError, TypeError):
        if kinds <= _SCALARS:
            # Scalars equal only scalars of their kind (ints and floats
            # are one kind).
            by_kind = {}
            for kind in kinds:
                by_kind.setdefault(_NUMBER.get(kind, kind), []).extend(
                    [item for item in items if type(item) is kind])
            return sum(map(len, map(set, by_kind.values()))) == len(items)
        return len({_canonical(item) for item in items}) == len(items)
    return not any(map(_utils.equal, ordered, ordered[1:]))


def _unique_items(validator, unique, instance, schema):
    if unique and validator.is_type(instance, 'array') and not all_unique(
            instance):
        yield jsonschema.ValidationError(
            f'{instance!r} has non-unique elements')


def _extras(instance, schema):
    """jsonschema's find_additional_properties, without a Python step per
    property (a body may have 120,000)."""
    named = schema.get('properties', {})
    found = itertools.filterfalse(named.__contains__, instance)
    patterns = '|'.join(schema.get('patternProperties', {}))
    if patterns:
        found = itertools.filterfalse(re.compile(patterns).search, found)
    return set(found)


def _additional_properties(validator, allowed, instance, schema):
    """jsonschema's additionalProperties, its extra properties found and
    named without a Python step each."""
    if not validator.is_type(instance, 'object'):
        return
    extras = _extras(instance, schema)
    if validator.is_type(allowed, 'object'):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        if 'patternProperties' in schema:
            verb = 'does' if len(extras) == 1 else 'do'
            joined = ', '.join(map(repr, sorted(extras)))
            patterns = ', '.join(map(repr, sorted(schema['patternProperties'])))
            yield jsonschema.ValidationError(
                f'{joined} {verb} not match any of the regexes: {patterns}')
        else:
            verb = 'was' if len(extras) == 1 else 'were'
            yield jsonschema.ValidationError(
                'Additional properties are not allowed (%s %s unexpected)'
                % (', '.join(map(repr, sorted(extras, key=str))), verb))


#: The validator of every schema here (none names its draft): the latest
#: draft's, with the uniqueItems and additionalProperties above.
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    {'uniqueItems': _unique_items,
     'additionalProperties': _additional_properties})


def _skip(validator, value, instance, schema):
    """A keyword whose errors are all deeper in the body."""
    return ()


def _direct_additional_properties(validator, allowed, instance, schema):
    if validator.is_type(allowed, 'object'):
        return ()
    return Validator.VALIDATORS['additionalProperties'](
        validator, allowed, instance, schema)


def _any_of(validator, alternatives, instance, schema):
    """anyOf, its alternatives checked whole (their own errors decide)."""
    whole = Validator(validator.schema, format_checker=validator.format_checker)
    return Validator.VALIDATORS['anyOf'](whole, alternatives, instance, schema)


#: Makes the errors of one place only: the keywords that descend into
#: properties and items make none.
_HereOnly = jsonschema.validators.extend(Validator, {
    'properties': _skip, 'patternProperties': _skip, 'items': _skip,
    'additionalProperties': _direct_additional_properties,
    'anyOf': _any_of})


#: A test of each JSON type, as an expression of ``v`` (jsonschema's type
#: checker of the latest draft: True is no integer, 1.0 is one; the
#: numbers of a JSON document are ints and floats).
_IS_TYPE = {
    'array': 'isinstance(v, list)',
    'boolean': 'isinstance(v, bool)',
    'integer': '(isinstance(v, int) and not isinstance(v, bool) or '
               'isinstance(v, float) and v.is_integer())',
    'null': 'v is None',
    'number': '(isinstance(v, (int, float)) and not isinstance(v, bool))',
    'object': 'isinstance(v, dict)',
    'string': 'isinstance(v, str)',
}
#: Keywords bounding a size or a number: (the type they apply to, the
#: failing comparison).
_BOUNDS = {'minLength': ('string', 'len(v) < %s'),
           'maxLength': ('string', 'len(v) > %s'),
           'minItems': ('array', 'len(v) < %s'),
           'maxItems': ('array', 'len(v) > %s'),
           'minProperties': ('object', 'len(v) < %s'),
           'maxProperties': ('object', 'len(v) > %s'),
           'minimum': ('number', 'v < %s'),
           'maximum': ('number', 'v > %s')}
#: The kinds a value of a type is of, for the bounds.
_KINDS_OF = {'integer': {'integer', 'number'}, 'number': {'number'},
             'string': {'string'}, 'array': {'array'},
             'object': {'object'}}


def _format_test(format_checker, name):
    """value -> True when it is not of the format ``name``; None when the
    checker does not know the format (jsonschema then accepts anything)."""
    if format_checker is None or name not in format_checker.checkers:
        return None
    test, raises = format_checker.checkers[name]
    if not raises:
        return lambda value: not test(value)

    def fails(value):
        try:
            return not test(value)
        except raises:
            return True
    return fails


def _failure_expressions(schema, format_checker, constants):
    """An expression of ``v`` for each keyword of ``schema`` whose errors
    are at the value itself, true when ``v`` breaks it; what they name is
    added to ``constants``. The type's comes first: once it has passed,
    the other tests need not ask what ``v`` is."""
    def constant(value):
        name = 'c%d' % len(constants)
        constants[name] = value
        return name

    types = schema.get('type', ())
    types = [types] if isinstance(types, str) else types
    known = _KINDS_OF.get(types[0], set()) if len(types) == 1 else set()
    if types:
        yield 'not (%s)' % ' or '.join(_IS_TYPE[name] for name in types)
    for keyword, value in schema.items():
        if keyword in _BOUNDS:
            kind, comparison = _BOUNDS[keyword]
            comparison = comparison % constant(value)
            yield (comparison if kind in known
                   else '(%s and %s)' % (_IS_TYPE[kind], comparison))
        elif keyword == 'enum':
            if not all(isinstance(member, str) for member in value):
                raise ValueError('enum: only strings are supported: %r'
                                 % value)
            yield 'not (isinstance(v, str) and v in %s)' % constant(
                frozenset(value))
        elif keyword == 'required':
            yield '(isinstance(v, dict) and not %s <= v.keys())' % constant(
                frozenset(value))
        elif keyword == 'pattern':
            yield '(isinstance(v, str) and not %s(v))' % constant(
                re.compile(value).search)
        elif keyword == 'format':
            test = _format_test(format_checker, value)
            if test is not None:
                yield '%s(v)' % constant(test)
        elif keyword == 'uniqueItems' and value:
            yield '(isinstance(v, list) and not %s(v))' % constant(
                all_unique)
        elif keyword == 'additionalProperties' and value is False:
            if schema.get('patternProperties'):
                yield '(isinstance(v, dict) and any(map(%s, v)))' % constant(
                    _extra_test(schema))
            else:
                yield '(isinstance(v, dict) and not v.keys() <= %s)' % (
                    constant(frozenset(schema.get('properties', {}))))
        elif keyword == 'anyOf':
            alternatives = [_compile(alternative, format_checker)
                            for alternative in value]
            yield 'all(place(v) is not None for place in %s)' % constant(
                alternatives)


def _place_function(schema, format_checker, in_object=None, in_array=None):
    """value -> None when it is valid, else the path of its best error:
    ``()`` when it breaks a keyword of ``schema`` whose errors are at the
    value itself, else what ``in_object`` (for a dict) or ``in_array``
    (for a list) find. Compiled into one expression: a body's every value
    goes through one."""
    constants = {'in_object': in_object, 'in_array': in_array}
    test = ' or '.join(_failure_expressions(schema, format_checker,
                                            constants)) or 'False'
    deeper = 'None'
    if in_array is not None:
        deeper = 'in_array(v) if isinstance(v, list) else None'
    if in_object is not None:
        deeper = 'in_object(v) if isinstance(v, dict) else ' + deeper
    return eval('lambda v: () if (%s) else %s' % (test, deeper), constants)


def _better(place, best):
    """Whether the error place ``place`` (a path, a tuple) beats ``best``:
    higher up in the body, or as high and greater."""
    return best is None or len(place) < len(best) or (
        len(place) == len(best) and place > best)


def _descends(schema):
    """Whether ``schema`` looks into properties or items."""
    return bool(schema.get('properties') or schema.get('patternProperties')
                or isinstance(schema.get('additionalProperties'), dict)
                or 'items' in schema)


def _object_places(schema, format_checker):
    """dict -> the best error place among its properties, or None."""
    named = {name: _compile(subschema, format_checker)
             for name, subschema in schema.get('properties', {}).items()}
    patterns = [(re.compile(pattern).search,
                 _compile(subschema, format_checker))
                for pattern, subschema in
                schema.get('patternProperties', {}).items()]
    extra_schema = schema.get('additionalProperties')
    extra = (_compile(extra_schema, format_checker)
             if isinstance(extra_schema, dict) else None)
    is_extra = _extra_test(schema)
    if not patterns and extra is None:
        def named_places(instance):
            best = None
            for key, value in instance.items():
                place = named.get(key)
                if place is not None:
                    found = place(value)
                    if found is not None and _better((key,) + found, best):
                        best = (key,) + found
            return best
        return named_places
    if not named and extra is None and len(patterns) == 1:
        [(search, place)] = patterns

        def pattern_places(instance):
            best = None
            for key, value in instance.items():
                if search(key):
                    found = place(value)
                    if found is not None and _better((key,) + found, best):
                        best = (key,) + found
            return best
        return pattern_places

    def places(instance):
        best = None
        for key, value in instance.items():
            place = named.get(key)
            if place is not None:
                found = place(value)
                if found is not None and _better((key,) + found, best):
                    best = (key,) + found
            for search, place in patterns:
                if search(key):
                    found = place(value)
                    if found is not None and _better((key,) + found, best):
                        best = (key,) + found
            if extra is not None and is_extra(key):
                found = extra(value)
                if found is not None and _better((key,) + found, best):
                    best = (key,) + found
        return best
    return places


def _array_places(items, format_checker):
    """list -> the best error place among its items, or None. Items that
    can only be wrong in themselves are looked at from the last: the last
    wrong one is the best."""
    place = _compile(items, format_checker)
    if _descends(items):
        def places(instance):
            best = None
            for index, item in enumerate(instance):
                found = place(item)
                if found is not None and _better((index,) + found, best):
                    best = (index,) + found
            return best
        return places

    def last_wrong(instance):
        found = list(map(place, instance))
        if found.count(None) == len(found):
            return None
        found.reverse()
        return (len(found) - 1 - found.index(()),)
    return last_wrong


def _compile(schema, format_checker):
    """value -> None when it is valid, else the path (a tuple, from the
    value) of the place of its best error."""
    if not isinstance(schema, dict):
        raise ValueError('only object schemas are supported: %r' % schema)
    unsupported = (set(schema) & set(Validator.VALIDATORS)) - SUPPORTED
    if unsupported:
        raise ValueError('unsupported keywords: %s' % sorted(unsupported))
    in_object = None
    if (schema.get('properties') or schema.get('patternProperties')
            or isinstance(schema.get('additionalProperties'), dict)):
        in_object = _object_places(schema, format_checker)
    in_array = (_array_places(schema['items'], format_checker)
                if 'items' in schema else None)
    return _place_function(schema, format_checker, in_object, in_array)


def _extra_test(schema):
    """key -> whether it is an extra property of ``schema``: neither named
    in its properties nor matched by its patterns (as jsonschema finds
    them, the patterns joined into one)."""
    named = schema.get('properties', {})
    patterns = '|'.join(schema.get('patternProperties', {}))
    if not patterns:
        return lambda key: key not in named
    search = re.compile(patterns).search
    return lambda key: key not in named and not search(key)


def _subschemas(schema, key):
    """(schema path, subschema) of each subschema of ``schema`` that
    applies to the property or item ``key``, in jsonschema's order."""
    found = []
    for keyword, value in schema.items():
        if keyword == 'properties' and key in value:
            found.append(((keyword, key), value[key]))
        elif keyword == 'patternProperties':
            found.extend(((keyword, pattern), subschema)
                         for pattern, subschema in value.items()
                         if re.search(pattern, key))
        elif (keyword == 'additionalProperties' and isinstance(value, dict)
              and _extra_test(schema)(key)):
            found.append(((keyword,), value))
        elif keyword == 'items' and isinstance(key, int):
            found.append(((keyword,), value))
    return found


class Checker:
    """A schema, compiled: :meth:`best_error` answers as
    ``jsonschema.exceptions.best_match(validator.iter_errors(instance))``."""

    def __init__(self, schema, format_checker=None):
        self.schema = schema
        self.format_checker = format_checker
        self._place = _compile(schema, format_checker)

    def best_error(self, instance):
        """The ValidationError jsonschema's best match gives, or None."""
        path = self._place(instance)
        if path is None:
            return None
        at = [((), self.schema)]
        value = instance
        for key in path:
            at = [(schema_path + step, subschema)
                  for schema_path, schema in at
                  for step, subschema in _subschemas(schema, key)]
            value = value[key]
        errors = []
        for schema_path, schema in at:
            for error in _HereOnly(
                    schema, format_checker=self.format_checker).iter_errors(
                        value):
                error.path.extendleft(reversed(path))
                error.schema_path.extendleft(reversed(schema_path))
                errors.append(error)
        best = jsonschema.exceptions.best_match(errors)
        if best is None:
            raise AssertionError('jsonschema finds no error at %r, where '
                                 'the compiled schema found one' % (path,))
        return best


def describe(error):
    """``str(error)`` for a ValidationError, as jsonschema writes it, with
    pretty.pformat making its text of the schema and of the instance (a
    1 MiB body, when the error is at its top)."""
    schema_path = _utils.format_as_index(
        container='schema', indices=list(error.relative_schema_path)[:-1])
    instance_path = _utils.format_as_index(container='instance',
                                           indices=error.relative_path)
    return ('%s\n\nFailed validating %r in %s:\n    %s\n\nOn %s:\n    %s' % (
        error.message, error.validator, schema_path,
        pretty.pformat(error.schema).replace('\n', '\n    '),
        instance_path,
        pretty.pformat(error.instance).replace('\n', '\n    ')))
