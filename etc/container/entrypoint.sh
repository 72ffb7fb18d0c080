#!/bin/sh
# The container image's entrypoint (Containerfile): the serving lines of
# etc/uwsgi.ini on the container's addresses, or any command of the image.
#
#   router         uwsgi's HTTP router, on $PLACEMENT_LITE_HTTP_ADDRESS (:8778)
#   behind-nginx   the uwsgi protocol, on $PLACEMENT_LITE_UWSGI_ADDRESS (:8779)
#   anything else  run as it is: placement-lite db sync, placement-lite status
#
# Options after the line's name go to uwsgi (--processes 8). uwsgi is
# PID 1: a stop's SIGTERM reaches its master, which drains
# (docs/deploying.md, "Restarting and upgrading").
set -eu
ini=/opt/placement-lite/share/placement-lite/etc/uwsgi.ini
case "${1:-router}" in
    router)
        [ $# -gt 0 ] && shift
        exec uwsgi --shared-socket "${PLACEMENT_LITE_HTTP_ADDRESS:-:8778}" \
            --ini "$ini:router" "$@" ;;
    behind-nginx)
        shift
        exec uwsgi --socket "${PLACEMENT_LITE_UWSGI_ADDRESS:-:8779}" \
            --ini "$ini:placement" "$@" ;;
    *)
        exec "$@" ;;
esac
