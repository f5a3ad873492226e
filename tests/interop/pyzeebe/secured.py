"""pyzeebe 4.7 over TLS with a bearer token (gRPC call credentials), as a client of a secured
gateway: `python secured.py ADDRESS CA_PEM TOKEN BPMN`. Prints one JSON line: the topology's
gateway version and the deployed process, or the error pyzeebe raised."""

import asyncio
import json
import sys

import grpc
from pyzeebe import ZeebeClient, create_secure_channel


async def main(address: str, ca: str, token: str, bpmn: str) -> None:
    with open(ca, "rb") as pem:
        credentials = grpc.composite_channel_credentials(
            grpc.ssl_channel_credentials(root_certificates=pem.read()),
            grpc.access_token_call_credentials(token),
        )
    client = ZeebeClient(
        create_secure_channel(grpc_address=address, channel_credentials=credentials)
    )
    try:
        topology = await client.topology()
        deployed = await client.deploy_resource(bpmn)
        outcome = {
            "version": topology.gateway_version,
            "deployed": [d.bpmn_process_id for d in deployed.deployments],
        }
    except Exception as error:  # what pyzeebe raised, for the test to assert
        cause = getattr(error, "grpc_error", None)
        outcome = {
            "error": type(error).__name__,
            "code": cause.code().name if cause is not None else None,
            "details": cause.details() if cause is not None else str(error),
        }
    print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
