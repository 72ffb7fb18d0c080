"""Policy rules: the reference's names and defaults, plus device profiles.

New (secure-RBAC) defaults come with the legacy ``role:admin`` as their
deprecated rule, so oslo.policy's ``[oslo_policy] enforce_new_defaults`` and
``enforce_scope`` switch between the two exactly as they do for the reference.
"""

from oslo_policy import policy

ADMIN_API = 'rule:admin_api'
SERVICE = 'rule:service_api'
ADMIN_OR_SERVICE = 'rule:admin_or_service_api'
ADMIN_OR_PROJECT_READER_OR_SERVICE = (
    'rule:admin_or_project_reader_or_service_api')

_DEPRECATED_REASON = (
    'Placement API policies have new default roles with scope_type '
    'capabilities; the old role:admin defaults are deprecated.')



def _base_rules():
    legacy_admin = policy.DeprecatedRule(
        name=ADMIN_API, check_str='role:admin',
        deprecated_reason=_DEPRECATED_REASON, deprecated_since='W')
    return [
        policy.RuleDefault(
            'admin_api', 'role:admin',
            description='Default rule for most placement APIs.',
            scope_types=['project']),
        policy.RuleDefault(
            'service_api', 'role:service',
            description='Default rule for service-to-service placement APIs.',
            scope_types=['project'], deprecated_rule=legacy_admin),
        policy.RuleDefault(
            'admin_or_service_api', 'role:admin or role:service',
            description='Default rule for most placement APIs.',
            scope_types=['project'], deprecated_rule=legacy_admin),
        policy.RuleDefault(
            'project_reader_api', 'role:reader and project_id:%(project_id)s',
            description='Default rule for project level reader APIs.',
            deprecated_rule=legacy_admin),
        policy.RuleDefault(
            'admin_or_project_reader_or_service_api',
            'role:admin or rule:project_reader_api or role:service',
            description='Default rule for project level reader APIs.',
            scope_types=['project'], deprecated_rule=legacy_admin),
    ]

# (name, check, method, path, description)
_API_RULES = [
    ('placement:resource_providers:list', ADMIN_OR_SERVICE,
     'GET', '/resource_providers', 'List resource providers.'),
    ('placement:resource_providers:create', ADMIN_OR_SERVICE,
     'POST', '/resource_providers', 'Create resource provider.'),
    ('placement:resource_providers:show', ADMIN_OR_SERVICE,
     'GET', '/resource_providers/{uuid}', 'Show resource provider.'),
    ('placement:resource_providers:update', ADMIN_OR_SERVICE,
     'PUT', '/resource_providers/{uuid}', 'Update resource provider.'),
    ('placement:resource_providers:delete', ADMIN_OR_SERVICE,
     'DELETE', '/resource_providers/{uuid}', 'Delete resource provider.'),
    ('placement:resource_classes:list', ADMIN_OR_SERVICE,
     'GET', '/resource_classes', 'List resource classes.'),
    ('placement:resource_classes:create', ADMIN_OR_SERVICE,
     'POST', '/resource_classes', 'Create resource class.'),
    ('placement:resource_classes:show', ADMIN_OR_SERVICE,
     'GET', '/resource_classes/{name}', 'Show resource class.'),
    ('placement:resource_classes:update', ADMIN_OR_SERVICE,
     'PUT', '/resource_classes/{name}', 'Update resource class.'),
    ('placement:resource_classes:delete', ADMIN_OR_SERVICE,
     'DELETE', '/resource_classes/{name}', 'Delete resource class.'),
    ('placement:resource_providers:inventories:list', ADMIN_OR_SERVICE,
     'GET', '/resource_providers/{uuid}/inventories',
     'List resource provider inventories.'),
    ('placement:resource_providers:inventories:create', ADMIN_OR_SERVICE,
     'POST', '/resource_providers/{uuid}/inventories',
     'Create one resource provider inventory.'),
    ('placement:resource_providers:inventories:show', ADMIN_OR_SERVICE,
     'GET', '/resource_providers/{uuid}/inventories/{resource_class}',
     'Show resource provider inventory.'),
    ('placement:resource_providers:inventories:update', ADMIN_OR_SERVICE,
     'PUT', '/resource_providers/{uuid}/inventories',
     'Update resource provider inventory.'),
    ('placement:resource_providers:inventories:delete', ADMIN_OR_SERVICE,
     'DELETE', '/resource_providers/{uuid}/inventories',
     'Delete resource provider inventory.'),
    ('placement:resource_providers:aggregates:list', ADMIN_OR_SERVICE,
     'GET', '/resource_providers/{uuid}/aggregates',
     'List resource provider aggregates.'),
    ('placement:resource_providers:aggregates:update', ADMIN_OR_SERVICE,
     'PUT', '/resource_providers/{uuid}/aggregates',
     'Update resource provider aggregates.'),
    ('placement:resource_providers:usages', ADMIN_OR_SERVICE,
     'GET', '/resource_providers/{uuid}/usages',
     'List resource provider usages.'),
    ('placement:usages', ADMIN_OR_PROJECT_READER_OR_SERVICE,
     'GET', '/usages', 'List total resource usages for a given project.'),
    ('placement:traits:list', ADMIN_OR_SERVICE,
     'GET', '/traits', 'List traits.'),
    ('placement:traits:show', ADMIN_OR_SERVICE,
     'GET', '/traits/{name}', 'Show trait.'),
    ('placement:traits:update', ADMIN_OR_SERVICE,
     'PUT', '/traits/{name}', 'Update trait.'),
    ('placement:traits:delete', ADMIN_OR_SERVICE,
     'DELETE', '/traits/{name}', 'Delete trait.'),
    ('placement:resource_providers:traits:list', ADMIN_OR_SERVICE,
     'GET', '/resource_providers/{uuid}/traits',
     'List resource provider traits.'),
    ('placement:resource_providers:traits:update', ADMIN_OR_SERVICE,
     'PUT', '/resource_providers/{uuid}/traits',
     'Update resource provider traits.'),
    ('placement:resource_providers:traits:delete', ADMIN_OR_SERVICE,
     'DELETE', '/resource_providers/{uuid}/traits',
     'Delete resource provider traits.'),
    ('placement:allocations:manage', ADMIN_OR_SERVICE,
     'POST', '/allocations', 'Manage allocations.'),
    ('placement:allocations:list', ADMIN_OR_SERVICE,
     'GET', '/allocations/{consumer_uuid}', 'List allocations.'),
    ('placement:allocations:update', ADMIN_OR_SERVICE,
     'PUT', '/allocations/{consumer_uuid}', 'Update allocations.'),
    ('placement:allocations:delete', ADMIN_OR_SERVICE,
     'DELETE', '/allocations/{consumer_uuid}', 'Delete allocations.'),
    ('placement:resource_providers:allocations:list', ADMIN_OR_SERVICE,
     'GET', '/resource_providers/{uuid}/allocations',
     'List resource provider allocations.'),
    ('placement:allocation_candidates:list', ADMIN_OR_SERVICE,
     'GET', '/allocation_candidates', 'List allocation candidates.'),
    ('placement:reshaper:reshape', SERVICE,
     'POST', '/reshaper', 'Reshape Inventory and Allocations.'),
    # placement_lite extensions.
    ('placement_lite:device_profiles:list', '',
     'GET', '/device_profiles', 'List device profiles.'),
    ('placement_lite:device_profiles:show', '',
     'GET', '/device_profiles/{uuid_or_name}', 'Show a device profile.'),
    ('placement_lite:device_profiles:create', ADMIN_API,
     'POST', '/device_profiles', 'Create a device profile.'),
    ('placement_lite:device_profiles:delete', ADMIN_API,
     'DELETE', '/device_profiles', 'Delete device profiles.'),
    ('placement_lite:allocation_claims:create', ADMIN_OR_SERVICE,
     'POST', '/allocation_claims',
     'Allocate the best allocation candidate to consumers.'),
]


def list_rules():
    """Fresh rule objects: oslo.policy mutates the defaults it registers."""
    return _base_rules() + [
        policy.DocumentedRuleDefault(
            name=name, check_str=check, description=description,
            operations=[{'method': method, 'path': path}],
            scope_types=['project'])
        for name, check, method, path, description in _API_RULES
    ]
