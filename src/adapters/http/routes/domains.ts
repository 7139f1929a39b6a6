import type express from 'express';
import type { Request, Response } from 'express';
import { AddDomain } from '../../../application/add-domain.js';
import { CheckDomain } from '../../../application/check-domain.js';
import { ListDomains } from '../../../application/list-domains.js';
import { RemoveDomain } from '../../../application/remove-domain.js';
import { VerifyDomain } from '../../../application/verify-domain.js';
import { challengeName, type DomainClaim } from '../../../domain/custom-domain.js';
import type { Username } from '../../../domain/username.js';
import type { Authentication } from '../auth.js';
import type { HttpDeps } from '../http-deps.js';
import { fallback, jsonBody, methodNotAllowed } from '../middleware.js';
import { jsonObject } from '../request-body.js';
import { projectParam } from './projects.js';

const domainParam = (req: Request): string => String(req.params.domain);

const verification = (claim: DomainClaim) => ({ type: 'TXT', name: challengeName(claim.domain), value: claim.challenge });

const answer = (claim: DomainClaim) => ({ status: 'ok', domain: claim.domain, verified: claim.verifiedAt !== undefined, verification: verification(claim) });

/**
 * A project's custom domains, with the owner's own token (a deploy key gets 401), and
 * the check Caddy asks before issuing a certificate, which takes no token.
 */
export function domainRoutes(app: express.Express, deps: Pick<HttpDeps, 'useCases' | 'logger'>, auth: Authentication): void {
  app
    .route('/api/v1/projects/:project/domains')
    .post(fallback('failed to add domain'), auth.userFirst, jsonBody, async (req: Request, res: Response) => {
      const user = res.locals.user as Username;
      const claim = await deps.useCases(AddDomain).execute(user, projectParam(req), jsonObject(req.body).domain);
      deps.logger.info('domain added', { user, project: projectParam(req), domain: claim.domain });
      res.json(answer(claim));
    })
    .get(fallback('failed to list domains'), async (req, res) => {
      const user = await auth.user(req, res);
      const claims = await deps.useCases(ListDomains).execute(user, projectParam(req));
      res.json({
        status: 'ok',
        domains: claims.map((c) => ({ domain: c.domain, verified: c.verifiedAt !== undefined, verifiedAt: c.verifiedAt?.toISOString() ?? null, verification: verification(c) })),
      });
    })
    .all(methodNotAllowed('GET, HEAD, POST'));

  app
    .route('/api/v1/projects/:project/domains/:domain/verify')
    .post(fallback('failed to verify domain'), async (req, res) => {
      const user = await auth.user(req, res);
      const claim = await deps.useCases(VerifyDomain).execute(user, projectParam(req), domainParam(req));
      deps.logger.info('domain verified', { user, project: projectParam(req), domain: claim.domain });
      res.json(answer(claim));
    })
    .all(methodNotAllowed('POST'));

  app
    .route('/api/v1/projects/:project/domains/:domain')
    .delete(fallback('failed to remove domain'), async (req, res) => {
      const user = await auth.user(req, res);
      await deps.useCases(RemoveDomain).execute(user, projectParam(req), domainParam(req));
      deps.logger.info('domain removed', { user, project: projectParam(req), domain: domainParam(req) });
      res.json({ status: 'ok' });
    })
    .all(methodNotAllowed('DELETE'));

  app
    .route('/api/v1/domains/check')
    .get(fallback('failed to check domain'), async (req, res) => {
      const { domain } = req.query;
      if (await deps.useCases(CheckDomain).execute(typeof domain === 'string' ? domain : undefined)) res.json({ status: 'ok' });
      else res.status(404).json({ status: 'error', error: 'domain not found' });
    })
    .all(methodNotAllowed('GET, HEAD'));
}
