"""${message}

An expand step: the previous release's processes keep serving on the
schema it leaves (add tables, nullable columns, indexes, rows; drop,
rename and NOT NULL wait for a later release's contract step:
migrations/README.md).

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}
"""
from alembic import op
import sqlalchemy as sa
${imports if imports else ""}

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = ${repr(branch_labels)}
depends_on = ${repr(depends_on)}


def upgrade():
    ${upgrades if upgrades else "pass"}
