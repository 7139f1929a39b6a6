import { fakeDeploys, realDeploysUnderTest } from './deploys-under-test.js';
import { sessionObjectsContract } from './session-objects.contract.js';

sessionObjectsContract('in-memory fake', fakeDeploys);
sessionObjectsContract('real directories', realDeploysUnderTest);
