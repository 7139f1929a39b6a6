/**
 * Every failure a use case can report. The HTTP adapter maps each class to its status
 * and the spec's message (error-response.ts), so nothing here knows HTTP.
 */
export abstract class DomainError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

export class InvalidUsername extends DomainError {
  constructor() {
    super('username does not match the required pattern');
  }
}

export class InvalidProjectName extends DomainError {
  constructor() {
    super('project name does not match the required pattern');
  }
}

export class InvalidReleaseId extends DomainError {
  constructor(value: string) {
    super(`not a release id: ${value}`);
  }
}

export class Unauthorized extends DomainError {
  constructor() {
    super('token rejected');
  }
}

export class UserNotFound extends DomainError {
  constructor() {
    super('user not found');
  }
}

/** The deploy carried no archive bytes at all. */
export class MissingArchive extends DomainError {
  constructor() {
    super('no archive was uploaded');
  }
}

/** The archive is unreadable or breaks the archive policy; `reason` is shown to the client. */
export class ArchiveRejected extends DomainError {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/**
 * A session would take what the user's open sessions may upload over the storage quota
 * (USER_MAX_BYTES): their uploads stay on the host until each publishes or ends.
 */
export class UploadsOverQuota extends DomainError {
  constructor(
    readonly wouldHold: number,
    readonly limit: number,
  ) {
    super(`open deploys would hold ${wouldHold} bytes of uploads, the quota is ${limit}`);
  }
}

/** Publishing would take the user's kept releases over the storage quota (USER_MAX_BYTES). */
export class StorageQuotaExceeded extends DomainError {
  constructor(
    readonly wouldKeep: number,
    readonly limit: number,
  ) {
    super(`this deploy would keep ${wouldKeep} bytes, the quota is ${limit}`);
  }
}

/** The web server could not be readied for a release (WEBSERVER_RELOAD or its admin API failed); the site is as it was. */
export class WebServerFailed extends DomainError {
  readonly code = 'web_server_failed';
  constructor(readonly reason: string) {
    super(`the web server could not be reloaded: ${reason}`);
  }
}

/** The deploy was given up before it was published (client gone, shutdown). */
export class DeployAborted extends DomainError {
  constructor(reason = 'deploy aborted') {
    super(reason);
  }
}

export class ProjectNotFound extends DomainError {
  constructor() {
    super('project not found');
  }
}

export class ReleaseNotFound extends DomainError {
  constructor() {
    super('release not found');
  }
}

/** A rollback with no release named, when none is older than the live one. */
export class NothingToRollBackTo extends DomainError {
  constructor() {
    super('no release older than the live one');
  }
}

/** A deploy key's name is empty, too long, or holds control characters. */
export class InvalidKeyName extends DomainError {
  constructor() {
    super('key name must be 1 to 64 characters, none of them control characters');
  }
}

export class InvalidKeyScope extends DomainError {
  constructor() {
    super("scope must be 'deploy' or 'preview'");
  }
}

export class InvalidKeyExpiry extends DomainError {
  constructor(readonly maxDays: number) {
    super(`expiresInDays must be a whole number from 1 to ${maxDays}`);
  }
}

export class DeployKeyNotFound extends DomainError {
  constructor() {
    super('key not found');
  }
}

export class InvalidPreviewName extends DomainError {
  constructor() {
    super('preview name does not match the required pattern');
  }
}

export class PreviewNotFound extends DomainError {
  constructor() {
    super('preview not found');
  }
}

/** A promote that named the release it was to make live, when the preview has been deployed again since. */
export class PreviewMoved extends DomainError {
  constructor(readonly current: string, readonly expected: string) {
    super(`the preview is at release ${current}, not ${expected}: it was deployed again since`);
  }
}

/** A deploy of a new preview when the project already has PREVIEWS_MAX of them. */
export class TooManyPreviews extends DomainError {
  constructor(readonly max: number) {
    super(`the project has ${max} previews, the most it may have`);
  }
}

/** An incremental deploy's manifest breaks a rule a site archive would; `reason` is shown to the client. */
export class ManifestRejected extends DomainError {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** A batch of uploaded objects is not what the session asked for; nothing of it is kept. */
export class ObjectsRejected extends DomainError {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/**
 * A release cannot be built yet: the user's store lacks these objects (never uploaded,
 * or collected since the session asked). Uploading them and publishing again succeeds.
 */
export class ObjectsMissing extends DomainError {
  constructor(readonly digests: readonly string[]) {
    super(`${digests.length} objects missing`);
  }
}

/** No such deploy session for this user: never opened, expired, published or given up. */
export class DeploySessionNotFound extends DomainError {
  constructor() {
    super('deploy session not found');
  }
}

/** The signer (the user's own token, or one deploy key) already has DEPLOY_SESSIONS_MAX sessions open. */
export class TooManyDeploySessions extends DomainError {
  constructor(readonly max: number) {
    super(`the signer has ${max} deploy sessions open, the most it may have`);
  }
}

/**
 * A manifest relative to a release the server cannot start from: the release is gone,
 * is not one of this project's, or its files are not those the client's digest names.
 * All three are one answer, so no one learns which releases another user or project has.
 */
export class BaseReleaseChanged extends DomainError {
  constructor() {
    super('base release not found or changed');
  }
}

/**
 * A session's manifest is replaced only before anything is uploaded to it: uploads are
 * checked against the manifest they came for, and a session holds at most its
 * manifest's bytes of them (a new manifest for each batch would be a way round that).
 */
export class SessionUploadedAlready extends DomainError {
  constructor() {
    super('the session has uploads already');
  }
}

/** What a session holds was replaced by another request (a revision) since this one read it. */
export class DeploySessionChanged extends DomainError {
  constructor() {
    super('the deploy session changed meanwhile');
  }
}

/** A site's rule file has a line sitedrop cannot honour; nothing was published. */
export class SiteRulesRejected extends DomainError {
  readonly code = 'site_rules_rejected';
  constructor(
    readonly file: '_redirects' | '_headers',
    readonly line: number | undefined,
    readonly reason: string,
  ) {
    super(line === undefined ? `invalid ${file}: ${reason}` : `invalid ${file}: line ${line}: ${reason}`);
  }
}

/** Not a host name a project may be served at (syntax, an IP address, localhost, sitedrop's own hosts). */
export class InvalidDomain extends DomainError {
  constructor() {
    super('invalid domain');
  }
}

/** Another project verified this domain first. */
export class DomainInUse extends DomainError {
  constructor() {
    super('domain already in use');
  }
}

export class DomainNotFound extends DomainError {
  constructor() {
    super('domain not found');
  }
}

/** A project already has DOMAINS_MAX domains. */
export class TooManyDomains extends DomainError {
  constructor(readonly max: number) {
    super(`the project has ${max} domains, the most it may have`);
  }
}

/** The challenge's TXT record was not found; `found` says what was, capped and escaped. */
export class DomainNotVerified extends DomainError {
  constructor(readonly found: string) {
    super(`domain not verified: ${found}`);
  }
}
