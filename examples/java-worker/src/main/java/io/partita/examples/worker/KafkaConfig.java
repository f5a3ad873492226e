package io.partita.examples.worker;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * Kafka client properties from files in Kafka's own format: {@code PARTITA_KAFKA_CONFIG} (or
 * {@code --kafka-config}), the file the {@code partita} CLI and Kafka's tools read, then
 * {@code PARTITA_KAFKA_CONFIG_JOB_WORKER} over it. The Java client understands every key itself
 * ({@code security.protocol}, {@code sasl.*}, {@code ssl.*}, tuning), so they are passed as they
 * are into every consumer and producer of the worker.
 *
 * <p>Guarantees: with no file, clients get exactly the worker's own settings. The keys the worker
 * chooses for its guarantees ({@link #CHOSEN_BY_WORKER}) are refused in a file; serializers and
 * {@code bootstrap.servers} are always the worker's.
 */
record KafkaConfig(Properties properties, List<String> sources) {
  static final KafkaConfig NONE = new KafkaConfig(new Properties(), List.of());

  /** At-least-once and read-committed depend on these; each client sets its own. */
  static final Set<String> CHOSEN_BY_WORKER = Set.of(
      "group.id", "group.instance.id", "transactional.id", "isolation.level",
      "enable.auto.commit", "auto.offset.reset", "partition.assignment.strategy",
      "transaction.timeout.ms");

  /**
   * Reads the files, later ones over earlier ones; {@code files} maps the variable (or flag) that
   * named a file to its path, null when not given. Throws IllegalStateException naming the
   * variable and the file when one cannot be read or sets a key the worker chooses.
   */
  static KafkaConfig load(Map<String, String> files) {
    Properties merged = new Properties();
    List<String> sources = new ArrayList<>();
    for (Map.Entry<String, String> file : files.entrySet()) {
      if (file.getValue() == null || file.getValue().isEmpty()) {
        continue;
      }
      Path path = Path.of(file.getValue());
      Properties properties = new Properties();
      try (Reader in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
        properties.load(in);
      } catch (IOException | IllegalArgumentException e) {
        throw new IllegalStateException(file.getKey() + "=" + path
            + ": cannot read the Kafka client properties file (" + reason(e) + ")");
      }
      Set<String> refused = new TreeSet<>(properties.stringPropertyNames());
      refused.retainAll(CHOSEN_BY_WORKER);
      if (!refused.isEmpty()) {
        throw new IllegalStateException(file.getKey() + "=" + path + " sets " + refused
            + ", which the worker chooses for each of its clients (at-least-once and"
            + " read-committed depend on them): remove them from the file");
      }
      merged.putAll(properties);
      sources.add(file.getKey() + "=" + path);
    }
    return new KafkaConfig(merged, List.copyOf(sources));
  }

  private static String reason(Exception e) {
    if (e instanceof java.nio.file.NoSuchFileException) {
      return "no such file";
    }
    if (e instanceof java.nio.file.AccessDeniedException) {
      return "permission denied";
    }
    return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
  }

  /** The file's {@code bootstrap.servers}, or null. */
  String bootstrapServers() {
    return properties.getProperty("bootstrap.servers");
  }

  /**
   * E.g. {@code " over SASL_SSL (SCRAM-SHA-512), settings from
   * PARTITA_KAFKA_CONFIG=/etc/partita/worker.properties"}; empty without a file.
   */
  String describe() {
    if (sources.isEmpty()) {
      return "";
    }
    String protocol = properties.getProperty("security.protocol", "PLAINTEXT");
    String mechanism = properties.getProperty("sasl.mechanism");
    String how = protocol.toUpperCase().startsWith("SASL") && mechanism != null
        ? protocol + " (" + mechanism + ")" : protocol;
    return " over " + how + ", settings from " + String.join(" + ", sources);
  }

  /** The file's properties with {@code own} (the client's settings) over them. */
  Properties client(String bootstrapServers, Map<String, String> own) {
    Properties out = new Properties();
    out.putAll(properties);
    out.put("bootstrap.servers", bootstrapServers);
    out.putAll(own);
    return out;
  }
}
