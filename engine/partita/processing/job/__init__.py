"""The job domain: jobs that service tasks create and workers take, complete or fail.

- `processors`: JOB COMPLETE, FAIL, THROW_ERROR, UPDATE_RETRIES, RECUR_AFTER_BACKOFF,
  TIME_OUT and JOB_BATCH ACTIVATE (polling), with the due-date checkers of time-outs and
  back-offs;
- `push`: activation by push to a job topic, after every command that changed a job;
- `activation`: the job as a worker receives it, polled or pushed;
- `appliers`: JOB and JOB_BATCH events;
- `state`: the job column families and the only code that moves a job between states.
"""
