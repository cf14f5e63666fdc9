import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Cluster, type ClusterOptions } from './cluster.js';
import { createSigner, type Signer } from './cluster-flows.js';

/**
 * A cluster whose first node runs a fixture that holds it at one instant (test/fixtures/hold-*.mjs), a
 * directory for the fixture's files, and an approved signer: what the tests of a fault at an instant start from.
 */
export interface HeldCluster {
  cluster: Cluster;
  /** The test's own directory (the fixture's mark file, the signer's key), removed by `stop`. */
  dir: string;
  signer: Signer;
  /** Stops the nodes and removes `dir`. */
  stop(): Promise<void>;
}

export interface HeldClusterOptions extends Pick<ClusterOptions, 'nodes' | 'env'> {
  /** The name the test's directory starts with, under the system's temporary directory. */
  dirPrefix: string;
  /** The fixture node 0 imports, relative to the repository (test/fixtures/…). */
  fixture: string;
  /** Node 0's settings for its fixture, given the test's directory; read each time the node starts. */
  fixtureEnv: (dir: string) => Record<string, string>;
}

export async function startHeldCluster(options: HeldClusterOptions): Promise<HeldCluster> {
  const dir = mkdtempSync(join(tmpdir(), options.dirPrefix));
  let cluster: Cluster | undefined;
  const stop = async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    cluster = await Cluster.start({
      nodes: options.nodes,
      ...(options.env ? { env: options.env } : {}),
      nodeArgs: (index) => (index === 0 ? ['--import', resolve(options.fixture)] : []),
      nodeEnv: (index) => (index === 0 ? options.fixtureEnv(dir) : {}),
    });
    return { cluster, dir, signer: await createSigner(cluster, dir), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
