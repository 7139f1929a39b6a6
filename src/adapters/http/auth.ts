import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AuthenticateDeployer } from '../../application/authenticate-deployer.js';
import { AuthenticateUser } from '../../application/authenticate-user.js';
import type { Deployer } from '../../application/deployer.js';
import type { Username } from '../../domain/username.js';
import { tokensEqual } from '../crypto/token-hash.js';
import { bearerToken } from './bearer.js';
import type { HttpDeps } from './http-deps.js';
import { InvalidAdminToken } from './http-errors.js';

/**
 * Who may call a route, checked before any body is read. The routes name the kind of
 * caller they take; the checks themselves live here and only here. A deploy key is
 * accepted by `deployer` alone: on every other route it is no user token, so 401.
 */
export interface Authentication {
  /** Middleware for the administrator's routes: ADMIN_TOKEN, compared in constant time. */
  readonly admin: RequestHandler;
  /** The user a user token names; it goes on the request's log line. */
  user(req: Request, res: Response): Promise<Username>;
  /** `user` as middleware, for routes that read a body after it: the user is in `res.locals.user`. */
  readonly userFirst: RequestHandler;
  /** POST /api/v1/deploy only: a user token or a deploy key; the owner goes on the log line. */
  deployer(req: Request, res: Response): Promise<Deployer>;
}

export function authentication(deps: Pick<HttpDeps, 'settings' | 'useCases'>): Authentication {
  const admin = (req: Request, res: Response, next: NextFunction): void => {
    if (!tokensEqual(bearerToken(req) ?? '', deps.settings.adminToken)) throw new InvalidAdminToken();
    res.locals.user = '(admin)';
    next();
  };
  const user = async (req: Request, res: Response): Promise<Username> => {
    const signedIn = await deps.useCases(AuthenticateUser).execute(bearerToken(req));
    res.locals.user = signedIn;
    return signedIn;
  };
  const userFirst = async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    await user(req, res);
    next();
  };
  const deployer = async (req: Request, res: Response): Promise<Deployer> => {
    const signedIn = await deps.useCases(AuthenticateDeployer).execute(bearerToken(req));
    res.locals.user = signedIn.user;
    // The key's id, never its token: which CI secret deployed is worth a log line.
    if (signedIn.key) res.locals.key = signedIn.key.id;
    return signedIn;
  };
  return { admin, user, userFirst, deployer };
}
