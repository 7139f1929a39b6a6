import { NginxWebServer } from '../../src/adapters/webserver/nginx/nginx-web-server.js';
import { InMemoryWebServer } from '../support/fakes.js';
import { webServerContract } from './web-server.contract.js';

webServerContract('in-memory fake', async () => ({ server: new InMemoryWebServer(), close: async () => undefined }));
webServerContract('nginx (its router reads each release through its link)', async () => ({ server: new NginxWebServer(), close: async () => undefined }));
