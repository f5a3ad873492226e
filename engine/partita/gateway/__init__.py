"""The gateway: Zeebe's gRPC API and the Camunda 8.8 REST API in front of Partita's log.

- `operations`: the command layer both APIs share (requests -> commands -> replies, errors),
  with `arguments` (what a request is checked and shaped into) and `errors`;
- `grpc_api`: `gateway_protocol.Gateway` over it; `rest_api` and `rest_bodies`: the REST API's
  `/v2` endpoints;
- `waker`: parked ActivateJobs requests woken by the log's job records;
- `streams`: the job push served to job streams and parked long polls;
- `topology`: engine workers and partitions as Zeebe's brokers and partitions;
- `auth` and `security`: client authentication, TLS;
- `stubs`: the gRPC stubs, generated here from Zeebe's published protocol jar;
- `server`: both listeners in one asyncio loop (`partita gateway`).

It reaches the engine only through Kafka, like any client (`partita.client`).
"""
