import type { Log } from '../services/log.js'
import type { ChangeFeed } from './ChangeFeed.js'
import type { Leadership } from './Leadership.js'
import { PgChangeFeed } from './postgres/PgChangeFeed.js'
import { PgLeadership } from './postgres/PgLeadership.js'
import { SoleChangeFeed } from './SoleChangeFeed.js'
import { SoleLeadership } from './SoleLeadership.js'

/** How the control-plane processes of one installation find each other. */
export interface Cluster {
  leadership: Leadership
  feed: ChangeFeed
}

export type ClusterOptions =
  /** The embedded SQLite store serves one process: it leads, and has nobody to tell. */
  | { dialect: 'sqlite' }
  /** PostgreSQL: any number of processes; the leader holds an advisory lock, wake-ups go by LISTEN/NOTIFY. */
  | { dialect: 'postgres'; connectionString: string; namespace: string; log: Log; pollMs?: number }

/** Chooses the leadership and change-feed adapters from the store's dialect (once, in main.ts). */
export function clusterFor(o: ClusterOptions): Cluster {
  if (o.dialect === 'sqlite') return { leadership: new SoleLeadership(), feed: new SoleChangeFeed() }
  return {
    leadership: new PgLeadership({
      connectionString: o.connectionString,
      namespace: o.namespace,
      log: o.log,
      pollMs: o.pollMs,
    }),
    feed: new PgChangeFeed({ connectionString: o.connectionString, namespace: o.namespace, log: o.log }),
  }
}
