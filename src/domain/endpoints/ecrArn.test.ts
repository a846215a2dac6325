import { describe, expect, it } from 'vitest'
import { parseEcrArn } from './ecrArn.js'

describe('parseEcrArn', () => {
  it('reads region, account, nested repository and tag', () => {
    expect(parseEcrArn('arn:aws:ecr:us-east-1:123456789012:repository/team/sub/worker:v2.1')).toEqual({
      partition: 'aws',
      region: 'us-east-1',
      account: '123456789012',
      repository: 'team/sub/worker',
      tag: 'v2.1',
      registryHost: '123456789012.dkr.ecr.us-east-1.amazonaws.com',
    })
  })

  it('defaults the tag to latest and uses the China partition host', () => {
    expect(parseEcrArn('arn:aws-cn:ecr:cn-north-1:123456789012:repository/base')).toMatchObject({
      tag: 'latest',
      registryHost: '123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn',
    })
  })

  it.each([
    [
      'arn:gcp:ecr:us-east-1:123456789012:repository/base',
      'resource: partition "gcp" is not one of aws, aws-cn, aws-us-gov',
    ],
    [
      'arn:aws:ecr:us-east-1:123456789012:repository/base:',
      'resource: tag "" must be 1-128 characters of letters, digits, _ . - not starting with . or -',
    ],
    [
      'arn:aws:ecr:us-east-1:123456789012:repository/a//b',
      'resource: repository name "a//b" must be 2-256 lower-case characters: letters, digits and . _ - / between them',
    ],
  ])('rejects %s', (arn, error) => {
    expect(() => parseEcrArn(arn)).toThrow(error)
  })
})
