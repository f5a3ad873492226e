package io.partita.interop.camunda;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.camunda.client.CamundaClient;
import io.camunda.client.CamundaClientConfiguration;
import io.camunda.client.api.command.CreateProcessInstanceCommandStep1.CreateProcessInstanceCommandStep3;
import io.camunda.client.api.command.ProblemException;
import io.camunda.client.api.response.ActivatedJob;
import io.camunda.client.api.response.CorrelateMessageResponse;
import io.camunda.client.api.response.DeploymentEvent;
import io.camunda.client.api.response.Process;
import io.camunda.client.api.response.ProcessInstanceEvent;
import io.camunda.client.api.response.ProcessInstanceResult;
import io.camunda.client.api.response.PublishMessageResponse;
import io.camunda.client.api.response.Topology;
import io.camunda.client.api.worker.JobClient;
import io.camunda.client.api.worker.JobWorker;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.function.Function;
import org.apache.hc.client5.http.async.AsyncExecChainHandler;

/**
 * Camunda's Java client 8.8, unchanged API only, against {@code partita gateway} with the client's
 * defaults: REST for every command (job activation too), gRPC only for job streaming, which is off
 * by default; plaintext, no credentials. Run by tests/gateway/test_camunda_java.py:
 *
 * <pre>java -jar target/camunda-journey.jar REST_URL GRPC_URL BPMN_FILE...</pre>
 *
 * <p>Prints one JSON line per step: the client's configuration, topology, deploy, an instance's
 * result worked by a job worker, a message an instance waits for (published, then correlated), a
 * cancelled instance, a rejected command, and last the requests the client sent by protocol (seen
 * through the builder's own hooks: an HTTP chain handler and a gRPC interceptor). Any other failure
 * ends the program with an exception (exit code 1).
 */
public final class Journey {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> REST = new ConcurrentSkipListSet<>();
  private static final Set<String> GRPC = new ConcurrentSkipListSet<>();

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    URI rest = URI.create(args[0]);
    URI grpc = URI.create(args[1]);
    List<String> resources = List.of(args).subList(2, args.length);

    try (CamundaClient client = connect(rest, grpc)) {
      CamundaClientConfiguration config = client.getConfiguration();
      say(
          "configuration",
          "preferRestOverGrpc", config.preferRestOverGrpc(),
          "streamEnabled", config.getDefaultJobWorkerStreamEnabled());

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
      DeploymentEvent deployed = deploy.send().join();
      say(
          "deploy",
          "key", deployed.getKey(),
          "processes", sorted(deployed.getProcesses(), Process::getBpmnProcessId),
          "resources", sorted(deployed.getProcesses(), Process::getResourceName));

      try (JobWorker worker = doubler(client, "java-rest-worker")) {
        ProcessInstanceResult done =
            client
                .newCreateInstanceCommand()
                .bpmnProcessId("gw-double")
                .latestVersion()
                .variables(Map.of("amount", 21))
                .withResult()
                .send()
                .join();
        say(
            "create-with-result",
            "instance", done.getProcessInstanceKey(),
            "version", done.getVersion(),
            "variables", done.getVariablesAsMap());
      }

      var waiting = waitFor(client, "o-7").withResult().send();
      // kept for a minute: it correlates whether or not the instance has subscribed yet
      PublishMessageResponse published =
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

      ProcessInstanceEvent correlating = waitFor(client, "o-8").send().join();
      Map<String, Object> correlated = correlate(client, "o-8");
      correlated.put("created", correlating.getProcessInstanceKey());
      say("correlate", correlated);

      ProcessInstanceEvent waits = waitFor(client, "never-paid").send().join();
      client.newCancelInstanceCommand(waits.getProcessInstanceKey()).send().join();
      say("cancel", "instance", waits.getProcessInstanceKey());

      try {
        client.newCreateInstanceCommand().bpmnProcessId("gw-nobody").latestVersion().send().join();
        say("rejection", "status", "none");
      } catch (ProblemException rejected) {
        say(
            "rejection",
            "code", rejected.code(),
            "status", rejected.details().getStatus(),
            "title", rejected.details().getTitle(),
            "detail", rejected.details().getDetail());
      }
    }
    say("requests", "rest", List.copyOf(REST), "grpc", List.copyOf(GRPC));
  }

  /** The client as the builder makes it, plus hooks that only note each request's path. */
  private static CamundaClient connect(URI rest, URI grpc) {
    AsyncExecChainHandler seen =
        (request, entity, scope, chain, callback) -> {
          REST.add(request.getMethod() + " " + request.getPath().replaceAll("/\\d+", "/{key}"));
          chain.proceed(request, entity, scope, callback);
        };
    ClientInterceptor called =
        new ClientInterceptor() {
          @Override
          public <Q, A> ClientCall<Q, A> interceptCall(
              MethodDescriptor<Q, A> method, CallOptions options, Channel next) {
            GRPC.add(method.getBareMethodName());
            return next.newCall(method, options);
          }
        };
    return CamundaClient.newClientBuilder()
        .restAddress(rest)
        .grpcAddress(grpc)
        .withChainHandlers(seen)
        .withInterceptors(called)
        .build();
  }

  /** A worker of gw-double jobs: amount times the task header factor, and who worked it. */
  private static JobWorker doubler(CamundaClient client, String name) {
    return client.newWorker().jobType("gw-double").handler(Journey::double_).name(name).open();
  }

  private static void double_(JobClient jobs, ActivatedJob job) {
    int amount = ((Number) job.getVariablesAsMap().get("amount")).intValue();
    int factor = Integer.parseInt(job.getCustomHeaders().get("factor"));
    jobs.newCompleteCommand(job)
        .variables(Map.of("amount", amount * factor, "by", job.getWorker()))
        .send()
        .join();
  }

  /** An instance of gw-wait, waiting for gw-paid with {@code orderId}. */
  private static CreateProcessInstanceCommandStep3 waitFor(CamundaClient client, String orderId) {
    return client
        .newCreateInstanceCommand()
        .bpmnProcessId("gw-wait")
        .latestVersion()
        .variables(Map.of("orderId", orderId));
  }

  /**
   * Correlates gw-paid to the instance waiting with {@code orderId}. A correlation is not kept:
   * until the instance has subscribed, the answer is 404 and the message is tried again.
   */
  private static Map<String, Object> correlate(CamundaClient client, String orderId)
      throws InterruptedException {
    for (int attempt = 1; ; attempt++) {
      try {
        CorrelateMessageResponse correlated =
            client
                .newCorrelateMessageCommand()
                .messageName("gw-paid")
                .correlationKey(orderId)
                .variables(Map.of("paidBy", "transfer"))
                .send()
                .join();
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("key", correlated.getMessageKey());
        fields.put("instance", correlated.getProcessInstanceKey());
        fields.put("attempts", attempt);
        return fields;
      } catch (ProblemException notYet) {
        if (notYet.code() != 404 || attempt == 50) {
          throw notYet;
        }
        Thread.sleep(200);
      }
    }
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
