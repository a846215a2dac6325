import type { SecretBox } from '../SecretBox.js'

const context = (jobId: string) => `job:${jobId}:s3Config.accessSecret`

/** A job's s3Config as stored: `accessSecret` sealed with the data dir's key (see SecretBox). */
export function sealS3Config(secrets: SecretBox, jobId: string, s3: Record<string, unknown>): Record<string, unknown> {
  return typeof s3.accessSecret === 'string'
    ? { ...s3, accessSecret: secrets.seal(s3.accessSecret, context(jobId)) }
    : s3
}

/**
 * The s3Config handed to the worker, `accessSecret` in clear again. A value that does not open (stored
 * before secrets were sealed) is handed on as stored.
 */
export function openS3Config(
  secrets: SecretBox,
  jobId: string,
  stored: Record<string, unknown>,
): Record<string, unknown> {
  if (typeof stored.accessSecret !== 'string') return stored
  try {
    return { ...stored, accessSecret: secrets.open(stored.accessSecret, context(jobId)) }
  } catch {
    // Stored before secrets were sealed (plain text): handed on as it is, as the JSDoc says.
    return stored
  }
}
