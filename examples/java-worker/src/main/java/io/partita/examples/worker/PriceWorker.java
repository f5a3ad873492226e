package io.partita.examples.worker;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.SslAuthenticationException;

/**
 * The example's entry point: works {@code price} jobs by adding tax to the order's net amount.
 * Ctrl-C (SIGINT/SIGTERM) finishes the job in hand, commits and closes before the JVM exits.
 */
public final class PriceWorker {
  private PriceWorker() {}

  /**
   * The handler: {@code amount} (net, a job variable) plus tax at the task header
   * {@code taxRate} (default 0.19), rounded to cents. Without an amount the job fails.
   */
  static Map<String, Object> price(ActivatedJob job) {
    Object amount = job.variables().get("amount");
    if (amount == null) {
      throw new IllegalArgumentException("the order has no variable 'amount'");
    }
    BigDecimal net = new BigDecimal(amount.toString());
    BigDecimal rate = new BigDecimal(job.customHeaders().getOrDefault("taxRate", "0.19"));
    BigDecimal tax = net.multiply(rate).setScale(2, RoundingMode.HALF_UP);
    Map<String, Object> variables = new LinkedHashMap<>();
    variables.put("tax", tax);
    variables.put("price", net.add(tax).setScale(2, RoundingMode.HALF_UP));
    return variables;
  }

  /**
   * One line for a failure: the messages of the exception and its causes (a Kafka client's
   * "Failed to construct kafka consumer" names the bad setting only in its cause), and for a
   * refused login, certificate or ACL what to check.
   */
  static String explain(Exception e, Settings settings) {
    StringBuilder out = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      String message = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
      if (out.indexOf(message) < 0) {
        out.append(out.length() == 0 ? "" : ": ").append(message);
      }
      String where = settings.kafka().sources().isEmpty()
          ? "no Kafka properties file is set (PARTITA_KAFKA_CONFIG)"
          : String.join(" + ", settings.kafka().sources());
      if (t instanceof SslAuthenticationException) {
        return out + " (is the broker's CA in ssl.truststore.location? see " + where + ")";
      }
      if (t instanceof AuthenticationException) {
        return out + " (check sasl.mechanism and the user and password in sasl.jaas.config;"
            + " see " + where + ")";
      }
      if (t instanceof AuthorizationException) {
        return out + " (the principal lacks an ACL: see `partita acls --role job-worker`)";
      }
    }
    return out.toString();
  }

  public static void main(String[] args) throws Exception {
    Settings settings;
    try {
      settings = Settings.parse(args, System.getenv());
    } catch (IllegalArgumentException e) {
      boolean help = e.getMessage().isEmpty(); // --help
      (help ? System.out : System.err).print(help ? Settings.USAGE : e.getMessage() + "\n" + Settings.USAGE);
      System.exit(help ? 0 : 2);
      return;
    } catch (IllegalStateException e) {
      System.err.println("price worker: " + e.getMessage());
      System.exit(1);
      return;
    }
    JobWorker worker;
    try {
      worker = new JobWorker(settings, PartitaCodec.fromClasspath(), PriceWorker::price);
    } catch (IllegalStateException | KafkaException e) {
      System.err.println("price worker: " + explain(e, settings));
      System.exit(1);
      return;
    }
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      worker.stop();
      try {
        closed.await(60, TimeUnit.SECONDS); // let run() finish the job in hand and close the clients
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }));
    System.out.printf("price worker: %s jobs from %s (group %s) at %s%s%s%n",
        settings.jobType(), settings.jobTopic(), settings.group(), settings.bootstrapServers(),
        settings.kafka().describe(),
        settings.maxJobs() > 0 ? ", stopping after " + settings.maxJobs() + " jobs" : ", Ctrl-C to stop");
    try (worker) {
      worker.run();
      System.out.println("price worker stopped: " + worker.summary());
    } catch (IllegalStateException | KafkaException e) {
      System.err.println("price worker: " + explain(e, settings));
      closed.countDown();
      System.exit(1);
    } finally {
      closed.countDown();
    }
  }
}
