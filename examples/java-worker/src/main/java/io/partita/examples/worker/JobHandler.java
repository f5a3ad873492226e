package io.partita.examples.worker;

import java.util.Map;

/** The work of one job type. */
@FunctionalInterface
interface JobHandler {
  /**
   * Does the job and returns the variables to complete it with (merged into the task's scope).
   * An exception fails the job with one retry less; at 0 retries the engine raises an incident.
   */
  Map<String, Object> handle(ActivatedJob job) throws Exception;
}
