import { HOUR_MS, MONTH_MS, usdToMicros, type Micros } from './money.js'

/** The catalog's price of a GPU type (USD/h per GPU), as the config gives it. */
export interface GpuPrice {
  secure: number
  community: number
  serverless?: number
}

/** The catalog's price of a CPU flavor (USD/h per vCPU). */
export interface CpuPrice {
  securePerVcpu: number
  serverlessPerVcpu: number
}

/** USD prices the catalog does not carry (see services/billing/billingConfig.ts). */
export interface StoragePrices {
  containerDiskPerGbMonth: number
  persistentDiskPerGbMonth: number
  serverlessDiskPerGbMonth: number
  networkVolumePerGbMonth: { STANDARD: number; HIGH_PERFORMANCE: number }
  serverlessFeePerWorkerHour: number
  clusterDiskPerGbMonth: number
  clusterNetworkingPerPodHour: number
}

/** A price for a whole quantity: `micros` per `periodMs`. */
export interface Rate {
  micros: Micros
  periodMs: number
}

/**
 * Turns catalog and config prices (USD) into exact rates: the unit price rounded once to the micro-dollar,
 * then multiplied by the quantity. A GPU type or CPU flavor the catalog does not price costs nothing.
 */
export class PriceBook {
  constructor(
    private readonly lookup: { gpu(id: string): GpuPrice | undefined; cpu(id: string): CpuPrice | undefined },
    private readonly storage: StoragePrices,
  ) {}

  /** A pod's (or cluster member's) GPUs; COMMUNITY cloud at the community price. */
  podGpu(gpuTypeId: string, count: number, cloud: 'SECURE' | 'COMMUNITY' = 'SECURE'): Rate {
    const p = this.lookup.gpu(gpuTypeId)
    return hourly((p ? usdToMicros(cloud === 'COMMUNITY' ? p.community : p.secure) : 0) * count)
  }
  /** A serverless worker's GPUs: the serverless price, or the secure one for a type in no pool. */
  serverlessGpu(gpuTypeId: string, count: number): Rate {
    const p = this.lookup.gpu(gpuTypeId)
    return hourly((p ? usdToMicros(p.serverless ?? p.secure) : 0) * count)
  }
  podCpu(flavorId: string, vcpus: number): Rate {
    const p = this.lookup.cpu(flavorId)
    return hourly((p ? usdToMicros(p.securePerVcpu) : 0) * vcpus)
  }
  serverlessCpu(flavorId: string, vcpus: number): Rate {
    const p = this.lookup.cpu(flavorId)
    return hourly((p ? usdToMicros(p.serverlessPerVcpu) : 0) * vcpus)
  }
  containerDisk(gb: number): Rate {
    return monthly(usdToMicros(this.storage.containerDiskPerGbMonth) * gb)
  }
  persistentDisk(gb: number): Rate {
    return monthly(usdToMicros(this.storage.persistentDiskPerGbMonth) * gb)
  }
  serverlessDisk(gb: number): Rate {
    return monthly(usdToMicros(this.storage.serverlessDiskPerGbMonth) * gb)
  }
  serverlessFee(): Rate {
    return hourly(usdToMicros(this.storage.serverlessFeePerWorkerHour))
  }
  networkVolume(type: 'STANDARD' | 'HIGH_PERFORMANCE', gb: number): Rate {
    return monthly(usdToMicros(this.storage.networkVolumePerGbMonth[type]) * gb)
  }
  clusterDisk(gb: number): Rate {
    return monthly(usdToMicros(this.storage.clusterDiskPerGbMonth) * gb)
  }
  clusterNetworking(pods: number): Rate {
    return hourly(usdToMicros(this.storage.clusterNetworkingPerPodHour) * pods)
  }
}

const hourly = (micros: Micros): Rate => ({ micros, periodMs: HOUR_MS })
const monthly = (micros: Micros): Rate => ({ micros, periodMs: MONTH_MS })
