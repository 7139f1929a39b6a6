import { fakeDeploys, realDeploysUnderTest } from './deploys-under-test.js';
import { stagingContract } from './staging.contract.js';

stagingContract('in-memory fake', fakeDeploys);
stagingContract('real directories', realDeploysUnderTest);
