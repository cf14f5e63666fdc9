/**
 * A node asked to stop that first leaves its load balancer (docs/deployment.md "Stopping a node"): for
 * `shutdownDrainSeconds` it answers `/readyz` 503 `shutting_down` while serving everything else as before,
 * so the balancer's health check takes it out before its listener closes. A balancer that still sends a
 * request in that time gets a real answer instead of a reset connection.
 */
export class Drain {
  #draining = false;

  /** From now on this node is not ready. */
  begin(): void {
    this.#draining = true;
  }

  get draining(): boolean {
    return this.#draining;
  }
}
