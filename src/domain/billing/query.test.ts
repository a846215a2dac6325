import { describe, expect, it } from 'vitest'
import type { AnyBillingQuery } from '../../contract/billing.js'
import { DomainError } from '../errors.js'
import { resolveQuery } from './query.js'

const NOW = Date.parse('2026-03-14T15:09:26.535Z')
const range = (q: AnyBillingQuery, route: Parameters<typeof resolveQuery>[0] = 'pods') => {
  const r = resolveQuery(route, q, NOW)
  return [new Date(r.start).toISOString(), new Date(r.end).toISOString(), r.bucketSize, r.grouping]
}
const problem = (q: AnyBillingQuery, route: Parameters<typeof resolveQuery>[0] = 'pods') => {
  try {
    resolveQuery(route, q, NOW)
  } catch (err) {
    if (err instanceof DomainError) return { kind: err.kind, errors: err.errors }
    throw err
  }
  throw new Error('no problem raised')
}

describe('billing query rules', () => {
  it.each<[string, AnyBillingQuery, unknown[]]>([
    [
      'defaults: the last 30 days by day, pods by GPU type',
      {},
      ['2026-02-12T00:00:00.000Z', '2026-03-15T00:00:00.000Z', 'day', 'gpuId'],
    ],
    [
      'a range snapped out to hour bounds',
      { startTime: '2026-03-14T10:30:00Z', endTime: '2026-03-14T12:00:00Z', bucketSize: 'hour' },
      ['2026-03-14T10:00:00.000Z', '2026-03-14T12:00:00.000Z', 'hour', 'gpuId'],
    ],
    [
      'a range given with an offset',
      { startTime: '2026-03-14T01:30:00+02:00', endTime: '2026-03-14T12:00:00Z' },
      ['2026-03-13T00:00:00.000Z', '2026-03-15T00:00:00.000Z', 'day', 'gpuId'],
    ],
    [
      'week buckets start on Monday',
      { startTime: '2026-03-14T00:00:00Z', endTime: '2026-03-17T00:00:00Z', bucketSize: 'week' },
      ['2026-03-09T00:00:00.000Z', '2026-03-23T00:00:00.000Z', 'week', 'gpuId'],
    ],
    [
      'lastN: the current bucket and N-1 before it',
      { lastN: 3, bucketSize: 'month' },
      ['2026-01-01T00:00:00.000Z', '2026-04-01T00:00:00.000Z', 'month', 'gpuId'],
    ],
    [
      'only endTime: 30 days before it',
      { endTime: '2025-01-31T00:00:00Z' },
      ['2025-01-01T00:00:00.000Z', '2025-01-31T00:00:00.000Z', 'day', 'gpuId'],
    ],
    [
      'grouping alias gpuTypeId',
      { grouping: 'gpuTypeId' },
      ['2026-02-12T00:00:00.000Z', '2026-03-15T00:00:00.000Z', 'day', 'gpuId'],
    ],
  ])('%s', (_name, q, expected) => {
    expect(range(q)).toEqual(expected)
  })

  it('defaults serverless to grouping by endpoint and echoes the resolved query with its filters', () => {
    const r = resolveQuery('serverless', { endpointId: 'ep1', lastN: 1, bucketSize: 'hour' }, NOW)
    expect(r.echo).toEqual({
      startTime: '2026-03-14T15:00:00.000Z',
      endTime: '2026-03-14T16:00:00.000Z',
      bucketSize: 'hour',
      grouping: 'endpointId',
      serverlessId: 'ep1',
      podId: null,
      gpuId: null,
    })
    expect(r.filters).toEqual({ resourceId: 'ep1' })
  })

  it.each<[string, AnyBillingQuery, string]>([
    [
      'lastN with a time range',
      { lastN: 2, startTime: '2026-03-01T00:00:00Z' },
      'lastN: cannot be combined with startTime',
    ],
    ['lastN with endTime', { lastN: 2, endTime: '2026-03-01T00:00:00Z' }, 'lastN: cannot be combined with endTime'],
    [
      'startTime after endTime',
      { startTime: '2026-03-02T00:00:00Z', endTime: '2026-03-01T00:00:00Z' },
      'startTime: 2026-03-02T00:00:00Z is not before endTime 2026-03-01T00:00:00Z',
    ],
    [
      'startTime equal to endTime',
      { startTime: '2026-03-01T00:00:00Z', endTime: '2026-03-01T00:00:00Z' },
      'startTime: 2026-03-01T00:00:00Z is not before endTime',
    ],
    [
      'startTime in the future with the default end',
      { startTime: '2027-01-01T00:00:00Z' },
      'startTime: 2027-01-01T00:00:00Z is not before endTime 2026-03-14T15:09:26.535Z (now)',
    ],
    [
      'too many buckets',
      { startTime: '2020-01-01T00:00:00Z', bucketSize: 'hour' },
      'bucketSize: the range 2020-01-01T00:00:00.000Z .. 2026-03-14T16:00:00.000Z holds more than 10000 hour buckets',
    ],
    [
      'endpointId differing from serverlessId',
      { serverlessId: 'a', endpointId: 'b' },
      'endpointId: "b" differs from serverlessId "a"',
    ],
  ])('refuses %s with a 400 naming the parameter', (_name, q, line) => {
    const p = problem(q, 'serverless')
    expect(p.kind).toBe('bad_request')
    expect(p.errors?.[0]).toContain(line)
  })
})
