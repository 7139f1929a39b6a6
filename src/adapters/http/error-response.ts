import {
  ArchiveRejected,
  BaseReleaseChanged,
  SessionUploadedAlready,
  DeployAborted,
  DeployKeyNotFound,
  DeploySessionChanged,
  DeploySessionNotFound,
  DomainError,
  DomainInUse,
  DomainNotFound,
  DomainNotVerified,
  InvalidDomain,
  TooManyDomains,
  InvalidKeyExpiry,
  InvalidPreviewName,
  InvalidKeyName,
  InvalidKeyScope,
  InvalidProjectName,
  InvalidReleaseId,
  InvalidUsername,
  ManifestRejected,
  MissingArchive,
  NothingToRollBackTo,
  ObjectsMissing,
  ObjectsRejected,
  PreviewMoved,
  PreviewNotFound,
  ProjectNotFound,
  ReleaseNotFound,
  SiteRulesRejected,
  StorageQuotaExceeded,
  TooManyDeploySessions,
  TooManyPreviews,
  Unauthorized,
  UploadsOverQuota,
  UserNotFound,
  WebServerFailed,
} from '../../domain/errors.js';
import { HttpError, InvalidRequestBody, RETRY_AFTER_SECONDS } from './http-errors.js';

export interface ErrorResponse {
  readonly status: number;
  /** `missing`: the objects an incremental deploy must upload before it can publish. */
  readonly body: { status: 'error'; error: string; missing?: readonly string[] };
  /** False for the 500s nobody expected: those get logged with their cause. */
  readonly expected: boolean;
  readonly headers: Readonly<Record<string, string>>;
}

const respond = (status: number, error: string, expected = true, headers: Readonly<Record<string, string>> = {}): ErrorResponse => ({
  status,
  body: { status: 'error', error },
  expected,
  headers,
});

const RETRY_LATER = { 'Retry-After': String(RETRY_AFTER_SECONDS) };

/** body-parser marks its own failures with a `type`; all of them mean the body is unusable. */
function isBodyParserError(error: unknown): boolean {
  const type = (error as { type?: unknown }).type;
  return typeof type === 'string' && /^(entity|encoding|charset|stream)\./.test(type);
}

/**
 * The one table from failures to statuses and the spec's messages. `fallback` is the
 * operation's own message for a failure nobody foresaw ("deployment failed", ...).
 */
export function toErrorResponse(error: unknown, fallback: string): ErrorResponse {
  if (error instanceof HttpError) return respond(error.status, error.publicMessage, true, error.headers);
  if (isBodyParserError(error)) return respond(400, new InvalidRequestBody().publicMessage);
  if (error instanceof DomainError) {
    if (error instanceof InvalidUsername) return respond(400, 'invalid username format');
    if (error instanceof InvalidProjectName) return respond(400, 'invalid project name format');
    if (error instanceof InvalidReleaseId) return respond(400, 'invalid release id');
    if (error instanceof InvalidPreviewName) return respond(400, 'invalid preview name format');
    if (error instanceof MissingArchive) return respond(400, 'missing or invalid file');
    if (error instanceof InvalidKeyName) return respond(400, 'key name must be 1 to 64 characters, none of them control characters');
    if (error instanceof InvalidKeyScope) return respond(400, "scope must be 'deploy' or 'preview'");
    if (error instanceof InvalidKeyExpiry) return respond(400, `expiresInDays must be a whole number from 1 to ${error.maxDays}`);
    if (error instanceof InvalidDomain) return respond(400, 'invalid domain');
    if (error instanceof Unauthorized) return respond(401, 'unauthorized');
    if (error instanceof ProjectNotFound) return respond(404, 'project not found');
    if (error instanceof ReleaseNotFound) return respond(404, 'release not found');
    if (error instanceof DeployKeyNotFound) return respond(404, 'key not found');
    if (error instanceof PreviewNotFound) return respond(404, 'preview not found');
    if (error instanceof PreviewMoved) return respond(409, error.message);
    if (error instanceof DomainNotFound) return respond(404, 'domain not found');
    // 409: another project's verified claim, the project's own domains, or the DNS as it
    // stands are in the way; the message says what the lookup found, capped and escaped.
    if (error instanceof DomainInUse) return respond(409, 'domain already in use');
    if (error instanceof TooManyDomains) return respond(409, 'too many domains');
    if (error instanceof DomainNotVerified) return respond(409, error.message);
    // 409: the project's state, not the request, is in the way; deleting a preview clears it.
    if (error instanceof TooManyPreviews) return respond(409, `too many previews: PREVIEWS_MAX allows ${error.max} per project, delete one first`);
    if (error instanceof NothingToRollBackTo) return respond(409, 'no older release to roll back to');
    if (error instanceof ManifestRejected) return respond(400, `invalid manifest: ${error.reason}`);
    if (error instanceof ObjectsRejected) return respond(400, `invalid objects: ${error.reason}`);
    // Its message names the file and the line; what it quotes of the line is shown as names are.
    if (error instanceof SiteRulesRejected) return respond(400, error.message);
    if (error instanceof DeploySessionNotFound) return respond(404, 'deploy session not found');
    // 409: the server's releases, not the request's form, are in the way; the whole manifest always works.
    if (error instanceof BaseReleaseChanged) return respond(409, 'base release not found or changed: send the whole manifest');
    if (error instanceof SessionUploadedAlready) return respond(409, 'the session has uploads already: open another to send another manifest');
    if (error instanceof DeploySessionChanged) return respond(409, 'the deploy session changed meanwhile: ask for it again');
    // 409 as a conflict with the store's state: uploading these objects resolves it.
    if (error instanceof ObjectsMissing) {
      const answer = respond(409, 'objects missing');
      return { ...answer, body: { ...answer.body, missing: error.digests } };
    }
    // 429: the signer's own open sessions (the user's token's, or this key's) are in the way; one ending frees a place.
    if (error instanceof TooManyDeploySessions) return respond(429, 'too many open deploy sessions, retry later', true, RETRY_LATER);
    // 507, as WebDAV quotas answer (RFC 4331): 413 already means an upload too large to
    // take, which a smaller upload fixes; this is the user's storage, which only deleting
    // projects or releases frees.
    if (error instanceof StorageQuotaExceeded) {
      return respond(507, `storage quota exceeded: this deploy would keep ${error.wouldKeep} bytes, USER_MAX_BYTES allows ${error.limit}`);
    }
    if (error instanceof UploadsOverQuota) {
      return respond(507, `storage quota exceeded: open deploys would hold ${error.wouldHold} bytes of uploads, USER_MAX_BYTES allows ${error.limit}`);
    }
    // The spec answers an unknown user with 500, not 404.
    if (error instanceof UserNotFound) return respond(500, 'user not found');
    if (error instanceof ArchiveRejected) return respond(500, `failed to extract tarball: ${error.reason}`);
    // The spec's message to the client; the reason (the reload's own words) goes to the log.
    if (error instanceof WebServerFailed) return respond(500, fallback, false);
    // Given up at shutdown: the spec's statuses for a deploy leave only 500 for it.
    if (error instanceof DeployAborted) return respond(500, fallback);
  }
  return respond(500, fallback, false);
}
