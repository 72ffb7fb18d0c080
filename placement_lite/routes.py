"""Every route placement_lite serves and the resource that answers it.

Read top to bottom, this is the API: a path template and the handler class
(one module per resource in ``placement_lite.handlers``) whose
``on_<method>`` responders answer it; a method it does not declare is a 405.
"""

from placement_lite.handlers import aggregates
from placement_lite.handlers import allocation_claims
from placement_lite.handlers import allocation_candidates
from placement_lite.handlers import allocations
from placement_lite.handlers import device_profiles
from placement_lite.handlers import inventories
from placement_lite.handlers import provider_traits
from placement_lite.handlers import reshaper
from placement_lite.handlers import resource_classes
from placement_lite.handlers import resource_providers
from placement_lite.handlers import root
from placement_lite.handlers import traits
from placement_lite.handlers import usages

ROUTES = [
    ('/', root.Root),
    ('/resource_providers', resource_providers.ResourceProviders),
    ('/resource_providers/{uuid}', resource_providers.ResourceProvider),
    ('/resource_providers/{uuid}/inventories', inventories.Inventories),
    ('/resource_providers/{uuid}/inventories/{resource_class}',
     inventories.Inventory),
    ('/resource_providers/{uuid}/aggregates', aggregates.ProviderAggregates),
    ('/resource_providers/{uuid}/traits', provider_traits.ProviderTraits),
    ('/resource_providers/{uuid}/usages', usages.ProviderUsages),
    ('/resource_providers/{uuid}/allocations',
     allocations.ProviderAllocations),
    ('/resource_classes', resource_classes.ResourceClasses),
    ('/resource_classes/{name}', resource_classes.ResourceClass),
    ('/traits', traits.Traits),
    ('/traits/{name}', traits.Trait),
    ('/allocations', allocations.AllocationsByConsumer),
    ('/allocations/{consumer_uuid}', allocations.ConsumerAllocations),
    ('/allocation_candidates', allocation_candidates.AllocationCandidates),
    ('/usages', usages.TotalUsages),
    ('/reshaper', reshaper.Reshaper),
]

#: placement_lite's extensions: these routes do not exist at all (404 for
#: every method) when ``[api] enable_extensions`` is off.
EXTENSION_ROUTES = [
    ('/device_profiles', device_profiles.DeviceProfiles),
    ('/device_profiles/{uuid_or_name}', device_profiles.DeviceProfile),
    ('/allocation_claims', allocation_claims.AllocationClaims),
]


def served(enable_extensions):
    """(path template, resource class) of every route served."""
    return ROUTES + (EXTENSION_ROUTES if enable_extensions else [])
