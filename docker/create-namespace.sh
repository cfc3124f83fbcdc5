#!/bin/sh
# The namespace the workers use and the search attributes ToolCallWorkflow publishes, registered
# once, before any worker starts: the server image creates no namespace, and the workers and the
# first calls find everything in place. Each step is skipped when it is done already, so the
# script runs again on an existing cluster.
# docker/compose.yaml runs it in the temporalio/admin-tools image; it needs the temporal CLI,
# TEMPORAL_ADDRESS and a POSIX shell.
set -eu

NAMESPACE=${NAMESPACE:-default}
RETENTION=${RETENTION:-72h}
ATTEMPTS=${ATTEMPTS:-60}
SEARCH_ATTRIBUTES="ToolCallStatus:Keyword ToolName:Keyword ToolCapabilities:KeywordList ToolCallGrantScope:Keyword ToolCallsWaiting:Int"

retry() {
    attempt=1
    until "$@"; do
        if [ "$attempt" -ge "$ATTEMPTS" ]; then
            echo "create-namespace: gave up after $ATTEMPTS attempts: $*" >&2
            return 1
        fi
        attempt=$((attempt + 1))
        sleep 2
    done
}

ensure_namespace() {
    temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1 \
        || temporal operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION"
}

ensure_attribute() {
    temporal operator search-attribute list --namespace "$NAMESPACE" | grep -qw "$1" \
        || temporal operator search-attribute create --namespace "$NAMESPACE" --name "$1" --type "$2"
}

retry temporal operator cluster health
retry ensure_namespace
# A new namespace takes a few seconds to reach every service: until then it is "not found".
for attribute in $SEARCH_ATTRIBUTES; do
    retry ensure_attribute "${attribute%%:*}" "${attribute##*:}"
done
echo "create-namespace: namespace $NAMESPACE and its search attributes are ready"
