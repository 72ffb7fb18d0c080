"""placement_lite's plugin for the ``openstack`` command line client."""
