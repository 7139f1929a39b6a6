import { fakeDeploys, realDeploysUnderTest } from './deploys-under-test.js';
import { releaseStoreContract } from './release-store.contract.js';

releaseStoreContract('in-memory fake', fakeDeploys);
releaseStoreContract('real directories', realDeploysUnderTest);
