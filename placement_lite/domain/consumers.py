"""Consumers as allocation writes see them: who owns them, which generation
the client expects, and creating or updating their records.

Rules (the reference's):

- before microversion 1.8 a consumer has no project/user in the request; it
  is recorded with the configured ``[placement]
  incomplete_consumer_project_id`` / ``incomplete_consumer_user_id``;
- from 1.28 the client states the consumer generation it expects: ``null``
  for a consumer that does not exist yet, the current generation otherwise;
  a mismatch is a 409 ``placement.concurrent_update`` whose detail starts
  with "consumer generation conflict" (clients look for those words);
- from 1.38 the request names the consumer type; below that an existing
  consumer keeps its type and a new one has none ("unknown");
- projects, users and consumer types are created the first time they are
  named, in the allocation write's transaction (first, so that writers
  take their locks in one order): a write that fails leaves none behind.
"""

import dataclasses

from placement_lite import errors
from placement_lite.db import consumers as consumers_db

#: ``ConsumerClaim.generation`` when the microversion predates generations.
UNCHECKED = object()


@dataclasses.dataclass
class ConsumerClaim:
    """What one consumer asks for in an allocation write."""

    uuid: str
    #: {provider_uuid: {resource_class: amount}} in request order; empty
    #: means "remove all of this consumer's allocations".
    allocations: dict
    project_id: str = None
    user_id: str = None
    generation: object = UNCHECKED
    #: None below 1.38: the consumer type is left as it is.
    consumer_type: str = None


@dataclasses.dataclass
class Owners:
    """Database ids of the projects, users and consumer types named."""

    projects: dict
    users: dict
    consumer_types: dict


@dataclasses.dataclass
class ConsumerState:
    """A consumer inside the write transaction."""

    id: int
    uuid: str
    generation: int


def _owner_of(conf, claim):
    if claim.project_id is None:
        return (conf.placement.incomplete_consumer_project_id,
                conf.placement.incomplete_consumer_user_id)
    return claim.project_id, claim.user_id


def ensure_owners(conn, conf, claims):
    """Ids of the projects, users and consumer types the claims name,
    creating the missing ones."""
    owners = [_owner_of(conf, claim) for claim in claims]
    return Owners(*consumers_db.owner_ids(
        conn, [project for project, _user in owners],
        [user for _project, user in owners],
        [claim.consumer_type for claim in claims
         if claim.consumer_type is not None]))


def _generation_conflict(expected, given):
    raise errors.Conflict(
        'consumer generation conflict - expected %s but got %s'
        % ('null' if expected is None else expected, given),
        code=errors.CONCURRENT_UPDATE)


def lock_consumers(conn, claims):
    """Lock the claims' existing consumers (before anything else a write
    locks); returns {uuid: consumer row}."""
    return consumers_db.consumers_by_uuid(
        conn, [claim.uuid for claim in claims], lock=True)


def check_generations(claims, existing):
    """409 unless each consumer is at the generation its claim expects."""
    for claim in claims:
        if claim.generation is UNCHECKED:
            continue
        row = existing.get(claim.uuid)
        if row is None:
            if claim.generation is not None:
                _generation_conflict(None, claim.generation)
        elif row.generation != claim.generation:
            _generation_conflict(row.generation, claim.generation)


def record_consumers(conn, conf, claims, owners, existing):
    """Create the consumers that do not exist; give existing ones the owner
    (and type) the request names. Generations are not changed here.

    Returns {uuid: ConsumerState}.
    """
    states = {}
    new = []
    changed = []
    for claim in claims:
        project, user = _owner_of(conf, claim)
        project_id = owners.projects[project]
        user_id = owners.users[user]
        row = existing.get(claim.uuid)
        if row is None:
            new.append((claim.uuid, project_id, user_id,
                        owners.consumer_types.get(claim.consumer_type)))
            continue
        type_id = row.consumer_type_id
        if claim.consumer_type is not None:
            type_id = owners.consumer_types[claim.consumer_type]
        if (project_id, user_id, type_id) != (
                row.project_id, row.user_id, row.consumer_type_id):
            changed.append((row.id, project_id, user_id, type_id))
        states[claim.uuid] = ConsumerState(row.id, row.uuid, row.generation)
    consumers_db.update_consumer_owners(conn, changed)
    for uuid, consumer_id in consumers_db.create_consumers(conn, new).items():
        states[uuid] = ConsumerState(consumer_id, uuid, 0)
    return states
