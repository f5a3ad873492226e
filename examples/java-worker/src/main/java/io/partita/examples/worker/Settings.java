package io.partita.examples.worker;

import java.util.Map;

/**
 * What the worker connects to and works on: command-line flags, else the same environment
 * variables as the {@code partita} CLI, else defaults that fit {@code partita up} on a laptop.
 */
record Settings(String bootstrapServers, String namespace, String jobType, int maxJobs) {

  static final String USAGE =
      """
      usage: java -jar target/price-worker.jar [--bootstrap-servers HOST:PORT] [--namespace NS]
                                               [--job-type TYPE] [--max-jobs N]
        --bootstrap-servers  Kafka (KAFKA_BOOTSTRAP_SERVERS, default 127.0.0.1:9092)
        --namespace          topic prefix (PARTITA_NAMESPACE, default partita)
        --job-type           job type to work on (default price)
        --max-jobs           stop after answering N jobs (default 0: run until Ctrl-C)
      """;

  static Settings parse(String[] args, Map<String, String> env) {
    String bootstrap = env.getOrDefault("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092");
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
        case "--job-type" -> jobType = value;
        case "--max-jobs" -> maxJobs = Integer.parseInt(value);
        default -> throw new IllegalArgumentException("unknown flag " + flag);
      }
    }
    return new Settings(bootstrap, namespace, jobType, maxJobs);
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
