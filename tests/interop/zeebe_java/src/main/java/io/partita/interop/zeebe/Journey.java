package io.partita.interop.zeebe;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.camunda.zeebe.client.ZeebeClient;
import io.camunda.zeebe.client.api.command.ClientStatusException;
import io.camunda.zeebe.client.api.response.ActivatedJob;
import io.camunda.zeebe.client.api.response.Process;
import io.camunda.zeebe.client.api.response.ProcessInstanceEvent;
import io.camunda.zeebe.client.api.response.ProcessInstanceResult;
import io.camunda.zeebe.client.api.response.Topology;
import io.camunda.zeebe.client.api.worker.JobClient;
import io.camunda.zeebe.client.api.worker.JobWorker;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Zeebe's Java client 8.6, unchanged API only, against {@code partita gateway} over plaintext
 * gRPC. Run by tests/gateway/test_java.py:
 *
 * <pre>java -jar target/zeebe-journey.jar ADDRESS BPMN_FILE...</pre>
 *
 * <p>Prints one JSON line per step: topology, deploy, an instance's result worked by a polling
 * job worker, the same by a worker with job streaming enabled, a message an instance waits for, a
 * cancelled instance and a rejected command. Any other failure ends the program with an exception
 * (exit code 1).
 */
public final class Journey {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    String address = args[0];
    List<String> resources = List.of(args).subList(1, args.length);

    try (ZeebeClient client = connect(address)) {
      Topology topology = client.newTopologyRequest().send().join();
      say(
          "topology",
          "brokers", topology.getBrokers().size(),
          "partitions", topology.getPartitionsCount(),
          "version", topology.getGatewayVersion());

      var deploy = client.newDeployResourceCommand().addResourceFile(resources.get(0));
      for (String resource : resources.subList(1, resources.size())) {
        deploy = deploy.addResourceFile(resource);
      }
      List<Process> processes = deploy.send().join().getProcesses();
      say(
          "deploy",
          "processes", sorted(processes, Process::getBpmnProcessId),
          "resources", sorted(processes, Process::getResourceName));

      try (JobWorker worker = doubler(client, "java-poller", false)) {
        say("create-with-result", result(client));
      }
    }

    // A client of its own for the streaming worker: closing the first one cancelled its worker's
    // pending ActivateJobs, so no job of this step can go to the closed worker.
    try (ZeebeClient client = connect(address)) {
      // The worker opens a job stream (and polls, more slowly, beside it). The gateway joins the
      // type's workers; once the engine sees them (it looks every second) it pushes the type's
      // jobs, and the gateway hands them to the stream: the instance is created after that.
      // The worker is closed only by the client's close: JobStreamerImpl.open leaks its lock
      // when a scheduled reopen finds the worker closed, so a second close (worker.close(),
      // then client.close()) can block forever (8.6.15 and 8.6.39).
      doubler(client, "java-streamer", true);
      Thread.sleep(3000);
      long started = System.nanoTime();
      Map<String, Object> streamed = result(client);
      streamed.put("millis", (System.nanoTime() - started) / 1_000_000);
      say("streaming-worker", streamed);

      var waiting =
          client
              .newCreateInstanceCommand()
              .bpmnProcessId("gw-wait")
              .latestVersion()
              .variables(Map.of("orderId", "o-7"))
              .withResult()
              .send();
      // kept for a minute: it correlates whether or not the instance has subscribed yet
      var published =
          client
              .newPublishMessageCommand()
              .messageName("gw-paid")
              .correlationKey("o-7")
              .timeToLive(Duration.ofMinutes(1))
              .variables(Map.of("paidBy", "card"))
              .send()
              .join();
      ProcessInstanceResult paid = waiting.join();
      say(
          "message",
          "key", published.getMessageKey(),
          "instance", paid.getProcessInstanceKey(),
          "variables", paid.getVariablesAsMap());

      ProcessInstanceEvent waits =
          client
              .newCreateInstanceCommand()
              .bpmnProcessId("gw-wait")
              .latestVersion()
              .variables(Map.of("orderId", "never-paid"))
              .send()
              .join();
      client.newCancelInstanceCommand(waits.getProcessInstanceKey()).send().join();
      say("cancel", "instance", waits.getProcessInstanceKey());

      try {
        client.newCreateInstanceCommand().bpmnProcessId("gw-nobody").latestVersion().send().join();
        say("rejection", "status", "none");
      } catch (ClientStatusException rejected) {
        say(
            "rejection",
            "status", rejected.getStatusCode().name(),
            "message", rejected.getMessage());
      }
    }
  }

  private static ZeebeClient connect(String address) {
    return ZeebeClient.newClientBuilder()
        .grpcAddress(URI.create("http://" + address))
        .usePlaintext()
        .preferRestOverGrpc(false)
        .build();
  }

  /** A worker of gw-double jobs: amount times the task header factor, and who worked it. */
  private static JobWorker doubler(ZeebeClient client, String name, boolean streaming) {
    return client
        .newWorker()
        .jobType("gw-double")
        .handler(Journey::double_)
        .name(name)
        .streamEnabled(streaming)
        .open();
  }

  private static void double_(JobClient jobs, ActivatedJob job) {
    int amount = ((Number) job.getVariablesAsMap().get("amount")).intValue();
    int factor = Integer.parseInt(job.getCustomHeaders().get("factor"));
    jobs.newCompleteCommand(job)
        .variables(Map.of("amount", amount * factor, "by", job.getWorker()))
        .send()
        .join();
  }

  private static Map<String, Object> result(ZeebeClient client) {
    ProcessInstanceResult done =
        client
            .newCreateInstanceCommand()
            .bpmnProcessId("gw-double")
            .latestVersion()
            .variables(Map.of("amount", 21))
            .withResult()
            .send()
            .join();
    Map<String, Object> fields = new LinkedHashMap<>();
    fields.put("instance", done.getProcessInstanceKey());
    fields.put("version", done.getVersion());
    fields.put("variables", done.getVariablesAsMap());
    return fields;
  }

  private static List<String> sorted(List<Process> processes, Function<Process, String> field) {
    return processes.stream().map(field).sorted().toList();
  }

  private static void say(String step, Object... pairs) {
    Map<String, Object> fields = new LinkedHashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      fields.put((String) pairs[i], pairs[i + 1]);
    }
    say(step, fields);
  }

  private static void say(String step, Map<String, Object> fields) {
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("step", step);
    line.putAll(fields);
    try {
      System.out.println(JSON.writeValueAsString(line));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
    System.out.flush();
  }

  private Journey() {}
}
