package io.partita.examples.worker;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/**
 * What the worker connects to and works on: command-line flags, else the same environment
 * variables as the {@code partita} CLI, else defaults that fit {@code partita up} on a laptop.
 * The cluster is {@code --bootstrap-servers}, else {@code KAFKA_BOOTSTRAP_SERVERS}, else the
 * properties file's {@code bootstrap.servers}, else 127.0.0.1:9092.
 */
record Settings(
    String bootstrapServers, String namespace, String jobType, int maxJobs, KafkaConfig kafka) {

  static final String USAGE =
      """
      usage: java -jar target/price-worker.jar [--bootstrap-servers HOST:PORT] [--namespace NS]
                                               [--kafka-config FILE] [--job-type TYPE] [--max-jobs N]
        --bootstrap-servers  Kafka (KAFKA_BOOTSTRAP_SERVERS, else the file's bootstrap.servers,
                             default 127.0.0.1:9092)
        --kafka-config       Kafka client properties: security.protocol, sasl.*, ssl.*, ...
                             (PARTITA_KAFKA_CONFIG; PARTITA_KAFKA_CONFIG_JOB_WORKER over it)
        --namespace          topic prefix (PARTITA_NAMESPACE, default partita)
        --job-type           job type to work on (default price)
        --max-jobs           stop after answering N jobs (default 0: run until Ctrl-C)
      """;

  /**
   * Throws IllegalArgumentException for a bad flag (an empty message for --help) and
   * IllegalStateException when a Kafka properties file cannot be used.
   */
  static Settings parse(String[] args, Map<String, String> env) {
    String bootstrap = env.get("KAFKA_BOOTSTRAP_SERVERS");
    String kafkaConfig = null;
    String namespace = env.getOrDefault("PARTITA_NAMESPACE", "partita");
    String jobType = "price";
    int maxJobs = 0;
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (flag.equals("-h") || flag.equals("--help")) {
        throw new IllegalArgumentException("");
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(flag + " needs a value");
      }
      String value = args[++i];
      switch (flag) {
        case "--bootstrap-servers" -> bootstrap = value;
        case "--namespace" -> namespace = value;
        case "--kafka-config" -> kafkaConfig = value;
        case "--job-type" -> jobType = value;
        case "--max-jobs" -> maxJobs = Integer.parseInt(value);
        default -> throw new IllegalArgumentException("unknown flag " + flag);
      }
    }
    Map<String, String> files = new LinkedHashMap<>();
    if (kafkaConfig != null) {
      files.put("--kafka-config", kafkaConfig);
    } else {
      files.put("PARTITA_KAFKA_CONFIG", env.get("PARTITA_KAFKA_CONFIG"));
    }
    files.put("PARTITA_KAFKA_CONFIG_JOB_WORKER", env.get("PARTITA_KAFKA_CONFIG_JOB_WORKER"));
    KafkaConfig kafka = KafkaConfig.load(files);
    if (bootstrap == null || bootstrap.isEmpty()) {
      bootstrap = kafka.bootstrapServers() != null ? kafka.bootstrapServers() : "127.0.0.1:9092";
    }
    return new Settings(bootstrap, namespace, jobType, maxJobs, kafka);
  }

  /** Settings of a Kafka client: the properties files, the cluster, then {@code own}. */
  Properties client(Map<String, String> own) {
    return kafka.client(bootstrapServers, own);
  }

  String jobTopic() {
    return namespace + ".jobs." + jobType;
  }

  String group() {
    return namespace + ".workers." + jobType;
  }

  /** The ingress topic: clients write commands here; only the engine writes {@code <ns>.log}. */
  String commandsTopic() {
    return namespace + ".commands";
  }

  String repliesTopic() {
    return namespace + ".replies";
  }
}
