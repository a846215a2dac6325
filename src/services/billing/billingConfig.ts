import { Type, type Static } from 'typebox'

const PerGbMonth = (usd: number, what: string) =>
  Type.Number({ minimum: 0, default: usd, description: `USD per GB-month (730 h) of ${what}` })

export const BillingConfig = Type.Object(
  {
    prices: Type.Object(
      {
        containerDiskPerGbMonth: PerGbMonth(0.1, 'a pod container disk while the pod runs'),
        persistentDiskPerGbMonth: PerGbMonth(0.1, 'a pod persistent mount while the pod exists'),
        serverlessDiskPerGbMonth: PerGbMonth(0.1, "a serverless worker's container disk while it is billed"),
        networkVolumePerGbMonth: Type.Object(
          {
            STANDARD: PerGbMonth(0.07, 'a STANDARD network volume'),
            HIGH_PERFORMANCE: PerGbMonth(0.14, 'a HIGH_PERFORMANCE network volume'),
          },
          {
            additionalProperties: false,
            default: {},
            description: 'USD per GB-month of a network volume, by its type.',
          },
        ),
        serverlessFeePerWorkerHour: Type.Number({
          minimum: 0,
          default: 0,
          description: 'A platform fee per billed serverless worker-hour; Hangar charges none by default.',
        }),
        clusterDiskPerGbMonth: PerGbMonth(0.1, 'a cluster member pod disk'),
        clusterNetworkingPerPodHour: Type.Number({
          minimum: 0,
          default: 0,
          description: "Per member pod-hour of a cluster's private network.",
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description: "Storage prices, USD (a month is 730 h); GPU and CPU prices are the catalog's.",
      },
    ),
    checkpointMs: Type.Integer({
      minimum: 100,
      default: 15_000,
      description:
        'How often the ledger notes that the control plane is alive. After a crash, work that did not survive it is billed up to the last note, so at most this much use goes unbilled and none is billed twice.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      "Prices of what the catalog does not price, and the usage ledger's timing. GPU and CPU prices are the catalog's (`catalog.gpus[].price`, `catalog.cpus[].price`), overridable there by id. Prices apply to intervals that open after a change; history keeps the price it was billed at.",
  },
)
export type BillingConfig = Static<typeof BillingConfig>
