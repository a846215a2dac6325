import { DomainError } from '../errors.js'

/** A container repository named by an ECR ARN, with the registry host to log in to. */
export interface EcrRepository {
  partition: string
  region: string
  /** The 12-digit cloud account that owns the repository. */
  account: string
  repository: string
  /** `latest` when the ARN names none. */
  tag: string
  /** `<account>.dkr.ecr.<region>.amazonaws.com` (`.com.cn` in the China partition). */
  registryHost: string
}

const PARTITIONS: Record<string, string> = {
  aws: 'amazonaws.com',
  'aws-cn': 'amazonaws.com.cn',
  'aws-us-gov': 'amazonaws.com',
}
// ECR repository names: lower-case path components separated by "/", each may contain . _ - between alphanumerics.
const REPOSITORY = /^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*\/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$/
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/
const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d+$/

/**
 * Parses `arn:aws:ecr:<region>:<account>:repository/<name>[:<tag>]`. Throws a 422 DomainError whose
 * `errors` say which part is wrong and what was expected.
 *
 * @example parseEcrArn('arn:aws:ecr:us-east-1:123456789012:repository/team/worker:v2').tag // 'v2'
 */
export function parseEcrArn(arn: string, path = 'resource'): EcrRepository {
  const fail = (why: string): never => {
    const line = `${path}: ${why}`
    throw new DomainError('unprocessable', line, [line])
  }
  const parts = arn.split(':')
  if (parts.length < 6 || parts[0] !== 'arn')
    fail(`${JSON.stringify(arn)} is not an ARN; expected arn:aws:ecr:<region>:<account>:repository/<name>[:<tag>]`)
  const [, partition, service, region, account] = parts
  const resource = parts.slice(5).join(':')
  if (!(partition in PARTITIONS))
    fail(`partition ${JSON.stringify(partition)} is not one of ${Object.keys(PARTITIONS).join(', ')}`)
  if (service !== 'ecr')
    fail(`service ${JSON.stringify(service)} is not "ecr"; only container repositories can be delegated`)
  if (!REGION.test(region)) fail(`region ${JSON.stringify(region)} is not a region name like us-east-1`)
  if (!/^\d{12}$/.test(account)) fail(`account ${JSON.stringify(account)} must be 12 digits`)
  if (!resource.startsWith('repository/')) fail(`resource ${JSON.stringify(resource)} must start with "repository/"`)
  const spec = resource.slice('repository/'.length)
  const colon = spec.lastIndexOf(':')
  const repository = colon < 0 ? spec : spec.slice(0, colon)
  const tag = colon < 0 ? 'latest' : spec.slice(colon + 1)
  if (repository.length < 2 || repository.length > 256 || !REPOSITORY.test(repository)) {
    fail(
      `repository name ${JSON.stringify(repository)} must be 2-256 lower-case characters: letters, digits and . _ - / between them`,
    )
  }
  if (!TAG.test(tag))
    fail(`tag ${JSON.stringify(tag)} must be 1-128 characters of letters, digits, _ . - not starting with . or -`)
  return {
    partition,
    region,
    account,
    repository,
    tag,
    registryHost: `${account}.dkr.ecr.${region}.${PARTITIONS[partition]}`,
  }
}
