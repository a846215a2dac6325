import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CatalogId,
  CpuFlavor,
  CpuList,
  CpuQuery,
  DataCenter,
  DataCenterByIdQuery,
  DataCenterList,
  DataCenterQuery,
  GpuList,
  GpuQuery,
  GpuType,
} from '../../contract/catalog.js'
import type { AppDeps } from '../app.js'

const tags = ['catalog']
// The catalog is not an account's resource: every valid key may read it, RESTRICTED ones included.
const config = { access: 'read' as const, restricted: 'any' as const }

/** GPU types, CPU flavors and data centers, with stock from the fleet. */
export const catalogRoutes =
  ({ catalog }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/v2/catalog/gpus',
      { config, schema: { tags, summary: 'List GPU types', querystring: GpuQuery, response: { 200: GpuList } } },
      async (req) => ({
        gpus: catalog.listGpus(req.query),
      }),
    )
    app.get(
      '/v2/catalog/gpus/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Get a GPU type',
          params: CatalogId,
          querystring: GpuQuery,
          response: { 200: GpuType },
        },
      },
      async (req) => catalog.getGpu(req.params.id, req.query),
    )
    app.get(
      '/v2/catalog/cpus',
      { config, schema: { tags, summary: 'List CPU flavors', querystring: CpuQuery, response: { 200: CpuList } } },
      async (req) => ({
        cpus: catalog.listCpus(req.query),
      }),
    )
    app.get(
      '/v2/catalog/cpus/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Get a CPU flavor',
          params: CatalogId,
          querystring: CpuQuery,
          response: { 200: CpuFlavor },
        },
      },
      async (req) => catalog.getCpu(req.params.id, req.query),
    )
    app.get(
      '/v2/catalog/datacenters',
      {
        config,
        schema: { tags, summary: 'List data centers', querystring: DataCenterQuery, response: { 200: DataCenterList } },
      },
      async (req) => ({
        dataCenters: catalog.listDataCenters(req.query),
      }),
    )
    app.get(
      '/v2/catalog/datacenters/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Get a data center',
          params: CatalogId,
          querystring: DataCenterByIdQuery,
          response: { 200: DataCenter },
        },
      },
      async (req) => catalog.getDataCenter(req.params.id, req.query.include),
    )
  }
